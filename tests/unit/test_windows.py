"""The monitor's windows of a model's own traffic: the one-sided test, and the store's
reference windows and in-place upgrade (issue 24)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from hss_gate.errors import InputError
from hss_gate.monitor import (
    EXIT_CODES,
    one_sided_fisher,
    window_reasons,
    window_signal_values,
    window_tests,
)
from hss_gate.samples import Sample, SampleStore

pytestmark = pytest.mark.unit

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def test_one_sided_fisher_is_the_exact_test_scipy_computes():
    stats = pytest.importorskip("scipy.stats")
    cases = [(10, 100, 10, 20), (2, 100, 3, 20), (44, 100, 9, 20), (0, 100, 0, 20), (5, 40, 1, 50)]
    for k_r, n_r, k_c, n_c in cases:
        reference = [1.0] * k_r + [0.0] * (n_r - k_r)
        current = [1.0] * k_c + [0.0] * (n_c - k_c)
        table = [[k_c, n_c - k_c], [k_r, n_r - k_r]]
        expected = stats.fisher_exact(table, alternative="greater").pvalue
        assert one_sided_fisher(reference, current) == pytest.approx(expected, rel=1e-9)
    # one-sided: 10 of 20 flagged in the reference, 10 of 100 now is no alarm
    assert one_sided_fisher([1.0] * 10 + [0.0] * 10, [1.0] * 10 + [0.0] * 90) > 0.99
    with pytest.raises(InputError):
        one_sided_fisher([], [1.0])
    with pytest.raises(InputError, match="0/1"):
        one_sided_fisher([0.5], [1.0])


def test_window_tests_flag_only_the_signal_that_got_worse():
    reference = {
        "live_low_consistency": [0.0] * 90 + [1.0] * 10,
        "live_any_unsupported": [1.0] * 10 + [0.0] * 90,
    }
    current = {"live_low_consistency": [1.0] * 12 + [0.0] * 8, "live_any_unsupported": [0.0] * 20}
    tests = window_tests(reference, current, alpha=0.005)
    by = {t["signal"]: t for t in tests}
    assert by["live_low_consistency"]["worse"] and not by["live_any_unsupported"]["worse"]
    assert by["live_low_consistency"]["n_reference"] == 100
    assert by["live_low_consistency"]["n_current"] == 20
    assert by["live_low_consistency"]["difference"] == pytest.approx(0.5)
    (reason,) = window_reasons(tests)
    assert "0.100 (n=100) to 0.600 (n=20)" in reason and "< alpha 0.005" in reason
    # the same rise at a stricter alpha than its p-value is not called
    p = by["live_low_consistency"]["p_value"]
    assert not any(t["worse"] for t in window_tests(reference, current, alpha=p / 2))


def test_window_signals_are_flags_of_the_served_signal_rows():
    rows = [
        {"live_low_consistency": True, "live_unsupported_share": 0.0},
        {"live_low_consistency": False, "live_unsupported_share": 0.25},
    ]
    assert window_signal_values(rows) == {
        "live_low_consistency": [1.0, 0.0],
        "live_any_unsupported": [0.0, 1.0],
    }


def test_insufficient_data_has_its_own_exit_code():
    assert EXIT_CODES["insufficient_data"] == 3
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


def _sample(i: int, model: str = "m1", minutes: int | None = None) -> Sample:
    return Sample(
        sample_id=f"{model}-{i}",
        document="The council met on Monday.",
        summary="The council met.",
        model_id=model,
        timestamp=T0 + timedelta(minutes=i if minutes is None else minutes),
    )


def check_reference_windows(url: str) -> None:
    """The store's windows by model and time, and its reference windows (run on every backend
    by test_samples.StoreBehaviours)."""
    with SampleStore(url) as store:
        store.ingest(
            [_sample(i, "m1") for i in range(5)] + [_sample(i, "m2", 10 + i) for i in range(3)]
        )
        assert store.model_ids() == ["m1", "m2"]
        assert [s.sample_id for s in store.first(3, "m1")] == ["m1-0", "m1-1", "m1-2"]
        assert [s.sample_id for s in store.first(9, "m2")] == ["m2-0", "m2-1", "m2-2"]
        window = store.between("m1", T0 + timedelta(minutes=1), T0 + timedelta(minutes=3))
        assert [s.sample_id for s in window] == ["m1-1", "m1-2"]  # until is excluded
        assert store.reference("m1") is None
        store.save_reference("m1", pinned=True, since=T0, until=T0 + timedelta(hours=1))
        store.save_reference(
            "m1",
            pinned=True,
            since=T0,
            until=T0 + timedelta(minutes=2),
            sample_ids=["m1-0", "m1-1"],
            checker="c1",
            values={"live_low_consistency": [0.0, 1.0]},
        )
        stored = store.reference("m1")
    assert stored["pinned"] and stored["checker"] == "c1"
    assert stored["until"] == T0 + timedelta(minutes=2)  # replaced, aware UTC
    assert stored["values"] == {"live_low_consistency": [0.0, 1.0]}
    assert stored["sample_ids"] == ["m1-0", "m1-1"]


# the schema the store had before reference windows (a store file created by that code)
OLD_SCHEMA = """
CREATE TABLE samples (
	seq INTEGER NOT NULL, sample_id VARCHAR NOT NULL, document TEXT NOT NULL,
	summary TEXT NOT NULL, model_id VARCHAR NOT NULL, timestamp DATETIME NOT NULL,
	category VARCHAR NOT NULL, ingested_at DATETIME NOT NULL,
	PRIMARY KEY (seq), UNIQUE (sample_id));
CREATE INDEX ix_samples_model_timestamp ON samples (model_id, timestamp, seq);
CREATE INDEX ix_samples_timestamp ON samples (timestamp, seq);
CREATE TABLE monitor_runs (
	seq INTEGER NOT NULL, run_id VARCHAR NOT NULL, started_at DATETIME NOT NULL,
	model VARCHAR NOT NULL, n_samples INTEGER NOT NULL, mean_hss FLOAT, ci_low FLOAT,
	ci_high FLOAT, drift BOOLEAN NOT NULL, drifted_columns JSON NOT NULL,
	decision VARCHAR NOT NULL, details JSON NOT NULL, PRIMARY KEY (seq), UNIQUE (run_id));
CREATE INDEX ix_monitor_runs_started ON monitor_runs (started_at, seq);
INSERT INTO samples VALUES (1, 's1', 'The council met.', 'It met.', 'm1',
	'2026-05-01 10:00:00.000000', 'news', '2026-05-01 11:00:00.000000');
INSERT INTO monitor_runs VALUES (1, 'r1', '2026-05-01 12:00:00.000000', 'gguf:x', 1, NULL,
	NULL, NULL, 0, '[]', 'healthy', '{"kind": "served"}');
"""


def test_an_old_store_upgrades_in_place_without_losing_rows(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.close()
    with SampleStore(f"sqlite:///{path}") as store:
        assert store.migrated == ["reference_windows"]
        assert [s.sample_id for s in store.recent(5)] == ["s1"]
        assert [r.run_id for r in store.runs()] == ["r1"]
        store.save_reference("m1", pinned=False, checker="c", values={"x": [1.0]})
        assert store.reference("m1")["values"] == {"x": [1.0]}
    with SampleStore(f"sqlite:///{path}") as again:
        assert again.migrated == []  # nothing left to upgrade
        assert again.count() == 1


def test_a_missing_nullable_column_is_added(tmp_path):
    path = tmp_path / "partial.sqlite"
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "CREATE TABLE reference_windows (model_id VARCHAR NOT NULL, pinned BOOLEAN NOT NULL, "
        "since DATETIME, until DATETIME, updated_at DATETIME NOT NULL, PRIMARY KEY (model_id))"
    )
    db.execute("INSERT INTO reference_windows VALUES ('m1', 1, NULL, NULL, '2026-05-01 10:00:00')")
    db.commit()
    db.close()
    with SampleStore(f"sqlite:///{path}") as store:
        assert sorted(store.migrated) == [
            "reference_windows.checker",
            "reference_windows.sample_ids",
            "reference_windows.values",
        ]
        kept = store.reference("m1")
    assert kept["pinned"] and kept["values"] is None
