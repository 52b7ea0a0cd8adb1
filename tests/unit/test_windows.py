"""The monitor's windows of a model's own traffic: the one-sided test, and the store's
reference windows and in-place upgrade (issue 24)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from hss_gate.common.errors import InputError
from hss_gate.monitoring.rules import (
    EXIT_CODES,
    WINDOW_COLUMNS,
    blocking_signal_values,
    compare_blocking_windows,
    compare_reported_windows,
    mann_whitney,
    one_sided_fisher,
    previous_current_last,
    reported_test_notes,
    window_distributions,
    window_reasons,
    window_signal_values,
)
from hss_gate.monitoring.store import Sample, SampleStore
from hss_gate.settings import MonitorSettings
from hss_gate.signals.tables import SERVED_COLUMNS
from hss_gate.workflows.monitor_windows import own_reference

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
    tests = compare_blocking_windows(reference, current, alpha=0.005)
    by = {t["signal"]: t for t in tests}
    assert [t["signal"] for t in tests] == ["live_low_consistency", "live_any_unsupported"]
    assert all(t["blocking"] and t["test"] == "fisher" for t in tests)
    assert by["live_low_consistency"]["worse"] and not by["live_any_unsupported"]["worse"]
    assert by["live_low_consistency"]["n_reference"] == 100
    assert by["live_low_consistency"]["n_current"] == 20
    assert by["live_low_consistency"]["difference"] == pytest.approx(0.5)
    (reason,) = window_reasons(tests)
    assert "0.100 (n=100) to 0.600 (n=20)" in reason and "< alpha 0.005" in reason
    # the same rise at a stricter alpha than its p-value is not called
    p = by["live_low_consistency"]["p_value"]
    assert not any(t["worse"] for t in compare_blocking_windows(reference, current, alpha=p / 2))


DEFAULT_VALUE = {"float": 0.5, "bool": False, "int": 30, "str": "", "json": "[]"}


def _row(**changes: object) -> dict:
    """A served signal row (`live_summary_signals`) of a faithful 30-word summary: every served
    column declared (tables.SERVED_COLUMNS), these values where a test reads them."""
    row = {c.name: DEFAULT_VALUE[c.dtype] for c in SERVED_COLUMNS} | {
        "live_low_consistency": False,
        "live_unsupported_share": 0.0,
        "live_consistency": 0.8,
        "live_novel_ngram_share": 0.2,
        "live_n_words": 30,
        "live_truncated": False,
        "live_near_empty": False,
        "live_copies_source": False,
        "live_overlong": False,
        "live_other_language": False,
    }
    return row | changes


def test_window_signals_are_flags_of_the_served_signal_rows():
    rows = [
        _row(live_low_consistency=True, live_consistency=0.1),
        _row(live_unsupported_share=0.25, live_novel_ngram_share=float("nan"), live_overlong=True),
    ]
    assert blocking_signal_values(rows) == {
        "live_low_consistency": [1.0, 0.0],
        "live_any_unsupported": [0.0, 1.0],
    }
    values = window_signal_values(rows)
    assert list(values) == list(WINDOW_COLUMNS)
    assert values["live_consistency"] == [0.1, 0.8]
    assert values["live_unsupported_share"] == [0.0, 0.25]
    assert values["live_novel_ngram_share"] == [0.2, None]  # not finite: missing, not 0
    assert values["live_n_words"] == [30.0, 30.0]
    assert values["live_overlong"] == [0.0, 1.0] and values["live_truncated"] == [0.0, 0.0]


def test_mann_whitney_is_the_exact_rank_test():
    # current [1, 2] below reference [3, 4, 5]: U = 0, the most extreme of C(5, 2) = 10 splits
    assert mann_whitney([3.0, 4.0, 5.0], [1.0, 2.0], "less") == pytest.approx(0.1)
    assert mann_whitney([3.0, 4.0, 5.0], [1.0, 2.0], "two-sided") == pytest.approx(0.2)
    assert mann_whitney([3.0, 4.0, 5.0], [1.0, 2.0], "greater") == pytest.approx(1.0)
    assert mann_whitney([2.0, 2.0], [2.0, 2.0, 2.0], "two-sided") == 1.0  # nothing to rank
    with pytest.raises(InputError):
        mann_whitney([], [1.0], "less")


def _values(n: int, **changes: object) -> dict:
    return window_signal_values([_row(**changes) for _ in range(n)])


def _mixed(n: int, column: str, low: float, high: float) -> dict:
    """n rows whose `column` runs evenly from low to high (a spread, so ranks differ)."""
    rows = [_row(**{column: low + (high - low) * i / (n - 1)}) for i in range(n)]
    return window_signal_values(rows)


def test_reported_tests_see_longer_and_rewritten_windows_without_blocking():
    reference = _mixed(100, "live_n_words", 20, 40)
    longer = _mixed(20, "live_n_words", 60, 90)
    tests = compare_blocking_windows(reference, longer, 0.001) + compare_reported_windows(
        reference, longer, 0.01
    )
    by = {t["signal"]: t for t in tests}
    assert by["live_n_words"]["worse"] and not by["live_n_words"]["blocking"]
    assert by["live_n_words"]["alternative"] == "two-sided"
    assert by["live_n_words"]["difference"] == pytest.approx(75 - 30)
    assert not by["live_low_consistency"]["worse"] and by["live_low_consistency"]["blocking"]
    assert window_reasons(tests) == []  # reported, not blocking
    (note,) = reported_test_notes(tests)
    assert note.startswith("reported (not blocking): length (words) changed")
    shorter = compare_reported_windows(reference, _mixed(20, "live_n_words", 2, 8), 0.01)
    assert next(t for t in shorter if t["signal"] == "live_n_words")["worse"]  # either way
    # rewriting
    rewritten = compare_reported_windows(
        _mixed(100, "live_novel_ngram_share", 0.0, 0.3),
        _mixed(20, "live_novel_ngram_share", 0.6, 0.9),
        0.01,
    )
    assert [t["signal"] for t in rewritten if t["worse"]] == ["live_novel_ngram_share"]


def test_reported_consistency_and_flags_are_one_sided():
    reference = _mixed(100, "live_consistency", 0.5, 0.9)
    lower = compare_reported_windows(reference, _mixed(20, "live_consistency", 0.1, 0.4), 0.01)
    higher = compare_reported_windows(reference, _mixed(20, "live_consistency", 0.91, 0.99), 0.01)
    assert next(t for t in lower if t["signal"] == "live_consistency")["worse"]
    assert not next(t for t in higher if t["signal"] == "live_consistency")["worse"]
    cut = compare_reported_windows(_values(100), _values(20, live_truncated=True), 0.01)
    fixed = compare_reported_windows(_values(100, live_truncated=True), _values(20), 0.01)
    assert [t["signal"] for t in cut if t["worse"]] == ["live_truncated"]
    assert not any(t["worse"] for t in fixed)  # fewer cut summaries is no finding
    by = {t["signal"]: t for t in cut}
    assert (by["live_truncated"]["test"], by["live_truncated"]["alternative"]) == (
        "fisher",
        "greater",
    )
    assert by["live_consistency"]["test"] == "mann_whitney"


def test_reported_tests_leave_missing_values_out():
    reference = _values(10)
    reference["live_novel_ngram_share"] = [None] * 10
    tests = compare_reported_windows(reference, _values(5), 0.01)
    assert "live_novel_ngram_share" not in {t["signal"] for t in tests}
    assert {t["signal"] for t in tests} >= {"live_consistency", "live_n_words"}


def test_window_distributions_summarize_each_signal_in_both_windows():
    reference = _mixed(11, "live_n_words", 10, 20)  # 10, 11, ..., 20
    current = _values(4, live_n_words=50)
    reference["live_novel_ngram_share"][0] = None
    rows = {d["signal"]: d for d in window_distributions(reference, current)}
    assert list(rows) == list(WINDOW_COLUMNS)
    words = rows["live_n_words"]
    assert words["label"] == "length (words)"
    assert words["reference"] == pytest.approx(
        {"n": 11, "mean": 15.0, "p10": 11.0, "median": 15.0, "p90": 19.0}
    )
    assert words["current"] == {"n": 4, "mean": 50.0, "p10": 50.0, "median": 50.0, "p90": 50.0}
    assert rows["live_novel_ngram_share"]["reference"]["n"] == 10
    empty = window_distributions({}, current)[0]["reference"]
    assert empty == {"n": 0, "mean": None, "p10": None, "median": None, "p90": None}


def test_previous_current_last_is_the_latest_run_of_the_same_kind_and_model():
    def run(kind: str, model: str, last: str | None) -> dict:
        return {"details": {"kind": kind, "model_id": model, "current_last": last}}

    runs = [  # newest first
        {"details": {"kind": "served", "reasons": ["could not monitor: x"]}},  # an error
        run("full", "m1", "2026-05-01T09:00:00+00:00"),
        run("served", "m2", "2026-05-01T08:30:00+00:00"),
        run("served", "m1", None),  # an empty current window
        run("served", "m1", "2026-05-01T08:00:00+00:00"),
        run("served", "m1", "2026-05-01T07:00:00+00:00"),
    ]
    assert previous_current_last(runs, "m1", "served") == T0.replace(hour=8)
    assert previous_current_last(runs, "m1", "full") == T0.replace(hour=9)
    assert previous_current_last(runs, "m3", "served") is None
    assert previous_current_last([], "m1", "served") is None


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


def test_after_gives_the_newest_samples_after_a_time(tmp_path):
    with SampleStore(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
        store.ingest([_sample(i, "m1") for i in range(10)] + [_sample(i, "m2") for i in range(3)])
        since = T0 + timedelta(minutes=5)
        assert [s.sample_id for s in store.after("m1", since, 100)] == [
            "m1-9",
            "m1-8",
            "m1-7",
            "m1-6",
        ]  # strictly after, newest first, of one model id
        assert [s.sample_id for s in store.after("m1", since, 2)] == ["m1-9", "m1-8"]
        assert store.after("m1", T0 + timedelta(minutes=9), 5) == []
        with pytest.raises(InputError):
            store.after("m1", since, -1)


def test_a_time_based_reference_is_the_first_days_once_they_are_over(tmp_path):
    monitor = MonitorSettings(reference_days=1.0, reference_window=3)
    hours = [0, 5, 23, 30]  # the first day ends at hour 24
    with SampleStore(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
        store.ingest([_sample(i, "m1", minutes=60 * h) for i, h in enumerate(hours[:3])])
        samples, source = own_reference(store, "m1", monitor)
        assert [s.sample_id for s in samples] == ["m1-0", "m1-1", "m1-2"]
        assert not source["complete"]  # nothing newer than the day yet: it may still grow
        assert source["until"] == (T0 + timedelta(days=1)).isoformat()
        store.ingest([_sample(3, "m1", minutes=60 * hours[3])])
        samples, source = own_reference(store, "m1", monitor)
        assert source["complete"] and source["days"] == 1.0 and not source["pinned"]
        assert [s.sample_id for s in samples] == ["m1-0", "m1-1", "m1-2"]  # not hour 30
        # a pinned range still wins
        store.save_reference("m1", pinned=True, since=T0, until=T0 + timedelta(hours=6))
        samples, source = own_reference(store, "m1", monitor)
        assert source["pinned"] and [s.sample_id for s in samples] == ["m1-0", "m1-1"]
        # a model id without samples has no reference
        assert own_reference(store, "m9", monitor)[1]["complete"] is False


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


def test_served_summaries_are_judged_against_the_length_the_served_product_asks_for(tmp_path):
    """A one-sentence served summary (15 words) is near-empty against a gate that asks for 100
    words (under max(3, 0.2 x 100) = 20), not against the served product's 20 words
    (monitor.summary_words: under 4); by default the gate's length (generate.summary_words) is
    the one, and 15 words is not near-empty at its default 60 (under 12)."""
    from hss_gate.settings import GenerateSettings, HssSettings, RunSettings
    from hss_gate.workflows.monitor_windows import served_signals
    from tests.reliability.test_bad_input import _fake_toolkit

    summary = "The city council approved a new budget for schools and roads after a long debate."
    assert len(summary.split()) == 15
    document = " ".join(
        f"Sentence {i} of the article says the city council met about schools and roads."
        for i in range(20)
    )
    sample = Sample(sample_id="s1", document=document, summary=summary, model_id="m1", timestamp=T0)

    def flags(**sections) -> dict:
        run = RunSettings(cache_dir=str(tmp_path / "cache"))
        (row,) = served_signals([sample], _fake_toolkit(), HssSettings(run=run, **sections))
        return row

    asks_100 = GenerateSettings(summary_words=100)
    assert HssSettings().monitor.summary_words is None
    assert not flags()["live_near_empty"]
    assert flags(generate=asks_100)["live_near_empty"]
    served = flags(generate=asks_100, monitor=MonitorSettings(summary_words=20))
    assert not served["live_near_empty"] and not served["live_overlong"]
    assert flags(monitor=MonitorSettings(summary_words=4))["live_overlong"]  # over 3 x 4 words
