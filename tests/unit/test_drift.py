"""Drift reports through the real Evidently 0.7 (one report ~0.5 s once evidently is imported)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hss_gate.common.errors import InputError
from hss_gate.monitoring.drift import DriftError, DriftResult, column_results, drift_report

pytestmark = pytest.mark.unit

N = 60


def _normal(seed: int, mean: float, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, 1.0, n)


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Column a shifts by 1.5 sd, column b keeps its distribution (fresh sample)."""
    reference = pd.DataFrame({"a": _normal(1, 0.0), "b": _normal(2, 0.0)})
    current = pd.DataFrame({"a": _normal(3, 1.5), "b": _normal(4, 0.0)})
    return reference, current


def test_shifted_column_drifts_and_unshifted_does_not(frames):
    reference, current = frames
    # sanity of the fixture itself: scipy's KS agrees on which column moved
    assert stats.ks_2samp(reference["a"], current["a"]).pvalue < 0.05
    assert stats.ks_2samp(reference["b"], current["b"]).pvalue > 0.05

    shifted = drift_report(reference, current, ["a"], drift_share=0.5)
    assert shifted.drifted is True
    assert shifted.drifted_columns == ["a"]
    (col,) = shifted.columns
    assert col.method == "K-S p_value"  # a continuous column's distribution test
    np.testing.assert_allclose(col.score, stats.ks_2samp(reference["a"], current["a"]).pvalue)

    same = drift_report(reference, current, ["b"], drift_share=0.5)
    assert same.drifted is False
    assert same.drifted_columns == []
    assert same.share == 0.0
    assert same.columns[0].drifted is False
    assert same.columns[0].score > 0.05


def test_share_rule(frames):
    reference, current = frames
    at_half = drift_report(reference, current, ["a", "b"], drift_share=0.5)
    assert at_half.share == pytest.approx(0.5)
    assert at_half.drifted is True
    assert [c.column for c in at_half.columns] == ["a", "b"]
    assert [c.drifted for c in at_half.columns] == [True, False]

    stricter = drift_report(reference, current, ["a", "b"], drift_share=0.75)
    assert stricter.share == pytest.approx(0.5)
    assert stricter.drifted is False
    assert stricter.drifted_columns == ["a"]


def test_missing_null_and_text_columns_are_skipped(frames):
    reference, current = frames
    reference = reference.assign(d=np.nan, e="x", f=np.r_[1.0, [np.nan] * (N - 1)])
    current = current.assign(c=1.0, d=1.0, e="y", f=1.0)
    result = drift_report(reference, current, ["a", "c", "d", "e", "f", "a"], drift_share=0.5)
    assert [c.column for c in result.columns] == ["a"]
    assert result.drifted is True and result.share == 1.0
    assert result.skipped_columns == ["c", "d", "e", "f"]
    assert "missing from reference" in result.skipped[0]
    assert "non-null" in result.skipped[1]
    assert "not numeric" in result.skipped[2]


def test_bool_columns_are_cast_to_float():
    reference = pd.DataFrame({"flag": [True, False] * (N // 2)})
    drifted = drift_report(reference, pd.DataFrame({"flag": [True] * N}), ["flag"], drift_share=0.5)
    assert drifted.drifted is True and drifted.columns[0].drifted is True
    stable = drift_report(reference, reference.iloc[::-1], ["flag"], drift_share=0.5)
    assert stable.drifted is False


@pytest.mark.parametrize("n_ref, n_cur", [(1, N), (N, 1), (0, 0)])
def test_tiny_frames_give_no_drift_with_a_reason(frames, tmp_path, n_ref, n_cur):
    reference, current = frames
    # a 1-row frame whose value is far away would be flagged by evidently (chi-square) if tested
    result = drift_report(
        reference.head(n_ref),
        current.head(n_cur) + 100,
        ["a", "b"],
        drift_share=0.5,
    )
    assert result.drifted is False and result.share == 0.0
    assert result.columns == []
    assert result.skipped_columns == ["a", "b"]
    assert all("too few rows" in s for s in result.skipped)
    assert result.html is None and result.json is None and result.pages == {}


def test_no_usable_columns_gives_no_drift(frames):
    reference, current = frames
    result = drift_report(reference, current, ["zzz"], drift_share=0.5)
    assert (result.drifted, result.columns, result.skipped_columns) == (False, [], ["zzz"])
    empty = drift_report(reference, current, [], drift_share=0.5)
    assert empty.drifted is False and empty.skipped


def test_returns_the_report_pages_and_the_workflow_writes_them(frames, tmp_path):
    from hss_gate.settings import MonitorSettings
    from hss_gate.workflows.shared import score_drift

    reference, current = frames
    result = drift_report(reference, current, ["a", "b"], drift_share=0.5, title="Drift <live>")
    assert set(result.pages) == {"html", "json"} and result.html is None  # nothing written
    assert "<title>Drift &lt;live&gt;</title>" in result.pages["html"]
    data = json.loads(result.pages["json"])
    assert {t["status"] for t in data["tests"]} >= {"FAIL", "SUCCESS"}
    assert column_results(data, ["a", "b"]) == result.columns  # the page re-reads the same way

    out = tmp_path / "monitor"
    settings = MonitorSettings(drift_columns=["a", "b"], drift_share=0.5)
    record = score_drift(reference, current, settings, out, "Score drift <live>")
    html_path, json_path = out / "drift.html", out / "drift.json"
    assert record["html"] == str(html_path) and record["json"] == str(json_path)
    assert html_path.stat().st_size > 10_000
    assert "<title>Score drift &lt;live&gt;</title>" in html_path.read_text(encoding="utf-8")
    assert sorted(p.name for p in out.iterdir()) == ["drift.html", "drift.json"]  # no temp left
    assert record["drifted"] is True and record["drifted_columns"] == ["a"]
    assert json.loads(json.dumps(record))["columns"][0]["column"] == "a"


def test_bad_drift_share_is_an_input_error(frames):
    reference, current = frames
    with pytest.raises(InputError):
        drift_report(reference, current, ["a"], drift_share=0.0)


def test_column_results_fails_closed_on_unreadable_snapshot():
    with pytest.raises(DriftError, match="no drift test"):
        column_results({"metrics": [], "tests": []}, ["a"])
    errored = {
        "metrics": [],
        "tests": [
            {
                "status": "ERROR",
                "metric_config": {
                    "metric_id": "x",
                    "params": {"type": "evidently:metric_v2:ValueDrift", "column": "a"},
                },
            }
        ],
    }
    with pytest.raises(DriftError, match="ERROR"):
        column_results(errored, ["a"])


def test_result_defaults_are_independent():
    one, two = DriftResult(drifted=False, share=0.0), DriftResult(drifted=False, share=0.0)
    one.skipped.append("a: x")
    assert two.skipped == []


# The issue-45 case: monitor.html on 57 served summaries called `live_unsupported_share` (the
# share of a summary's entities not in the source) "drift, chi-square p_value 0.000" while the
# monitor's own one-sided test on the same summaries (2 of 37 against 2 of 20 with any such
# entity) gave p 0.44. The current window's nonzero shares are values the reference never took.
REFERENCE_SHARES = [0.0] * 35 + [0.25, 0.2]
CURRENT_SHARES = [0.0] * 18 + [0.33, 0.5]


def test_a_sparse_fractional_column_is_not_drift_when_the_windows_own_test_says_no():
    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    from hss_gate.monitoring.rules import one_sided_fisher

    any_ref = [float(v > 0) for v in REFERENCE_SHARES]
    any_cur = [float(v > 0) for v in CURRENT_SHARES]
    assert one_sided_fisher(any_ref, any_cur) == pytest.approx(0.44, abs=0.005)
    ref = pd.DataFrame({"live_unsupported_share": REFERENCE_SHARES})
    cur = pd.DataFrame({"live_unsupported_share": CURRENT_SHARES})
    # Evidently's own choice for a numeric column of 5 distinct values: chi-square, "drift"
    definition = DataDefinition(numerical_columns=["live_unsupported_share"])
    with np.errstate(all="ignore"):
        default = Report([DataDriftPreset()], include_tests=True).run(
            current_data=Dataset.from_pandas(cur, data_definition=definition),
            reference_data=Dataset.from_pandas(ref, data_definition=definition),
        )
    (chosen,) = column_results(default.dict(), ["live_unsupported_share"])
    assert chosen.method == "chi-square p_value" and chosen.drifted

    (column,) = drift_report(ref, cur, ["live_unsupported_share"], drift_share=0.5).columns
    assert column.method == "K-S p_value" and not column.drifted
    expected = stats.ks_2samp(REFERENCE_SHARES, CURRENT_SHARES).pvalue
    np.testing.assert_allclose(column.score, expected)


def test_the_monitor_windows_drift_table_agrees_with_the_windows_own_test():
    """Through what builds the window columns (monitor_windows.windows_drift): the table tests
    the share as a distribution and does not call it drift."""
    from hss_gate.settings import MonitorSettings
    from hss_gate.workflows.monitor_windows import WINDOW_DRIFT_COLUMNS, windows_drift

    def window(seed: int, shares: list[float]) -> dict[str, list[float]]:
        rng = np.random.default_rng(seed)
        values = {c: list(rng.uniform(0.2, 0.9, len(shares))) for c in WINDOW_DRIFT_COLUMNS}
        values["live_n_words"] = [float(n) for n in rng.integers(40, 80, len(shares))]
        return values | {"live_unsupported_share": shares}

    drift = windows_drift(
        window(1, REFERENCE_SHARES), window(2, CURRENT_SHARES), MonitorSettings(), None
    )
    assert drift["methods"]["live_unsupported_share"] == "K-S p_value"
    assert "live_unsupported_share" not in drift["drifted_columns"]
    assert set(drift["methods"].values()) == {"K-S p_value"}  # every window column: continuous


def test_a_flag_gets_the_proportion_test_and_a_flag_with_other_values_is_skipped():
    ref = pd.DataFrame({"f": [0.0] * 30 + [1.0] * 10, "g": [0.0, 0.5] * 20})
    cur = pd.DataFrame({"f": [0.0] * 10 + [1.0] * 10, "g": [0.0, 1.0] * 10})
    result = drift_report(ref, cur, ["f", "g"], drift_share=0.5, flags=("f", "g"))
    (flag,) = result.columns
    assert flag.method == "Z-test p_value"
    pooled = 20 / 60
    z = (10 / 40 - 10 / 20) / np.sqrt(pooled * (1 - pooled) * (1 / 40 + 1 / 20))
    np.testing.assert_allclose(flag.score, 2 * stats.norm.sf(abs(z)))
    assert flag.drifted is (flag.score < 0.05)
    assert result.skipped == ["g: a 0/1 flag that holds other values"]


def test_the_flags_are_the_columns_declared_bool():
    from hss_gate.signals.tables import flag_columns

    chosen = ["live_truncated", "live_unsupported_share", "distance_low", "base_truncated", "hss"]
    assert flag_columns(chosen) == ("live_truncated", "base_truncated")
