"""`hss monitor --served-only` on real traffic with the real checker (issue 24, item 4): hourly
runs stay healthy while the deployed model's traffic is unchanged and turn unhealthy after it
switches to a summarizer that invents.

The traffic is frank_cnndm's (human-labelled CNN/DM summaries of 5 systems, outside the
repository; the test skips when ../shared/data/external is absent), served under one model id
and stored hour by hour through `hss samples ingest --corpus` (the documents come from frank's
documents.jsonl by doc_id), 20 samples an hour, one every 3 minutes:

- hours 0-4: 100 of bart's summaries: the model id's reference window (the checker flags 44% of
  bart's summaries, docs/MONITORING.md);
- hours 5-24: bart only has 250 documents, so the stream goes on by resampling all of bart's 250
  summaries, in permutations drawn with a fixed seed, each draw stored as a new sample id: an
  unchanged stream (the same summaries, the same flagged share), one monitor run an hour;
- from the middle of hour 25: s2s's summaries (the inventing system: 91% flagged) under the same
  model id, e.g. a provider swapped the model behind it. The rise 0.44 -> 0.91 is close to the
  smallest rise the default windows detect with 80% power (0.45, docs/MONITORING.md).

The monitor runs at the end of each hour, so its current window (the newest 20 samples of the
model id) is that hour's traffic and consecutive windows do not overlap. The run after hour 25 is
half-switched (10 bart + 10 s2s): recorded, not asserted (the power at a rise of ~0.24 is
~0.1). The run after hour 26 is the first whose window is mostly (all) post-switch: it must be
unhealthy; so must the next.

The checker (`invented-sbert`, the one the scenario was built for; the default `entail` is not
run here, see `invented_toolkit`), tagger, store, windows, test, verdict, CLI and exit codes are
all real. One toolkit (SBERT MiniLM + spaCy, built once for the module) serves every run, and the
verdict cache is shared by the module, so each (document, summary) pair is checked once.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.jsonl import read_jsonl
from hss_gate.monitoring.store import SampleStore
from tests.conftest import REPO

pytestmark = pytest.mark.integration

FRANK = REPO.parent / "shared" / "data" / "external" / "frank_cnndm"
MODEL_ID = "deployed-summarizer"
T0 = datetime(2026, 6, 1, tzinfo=UTC)
PER_HOUR = 20  # = monitor.sample_size: the newest 20 are exactly the last hour's traffic
REFERENCE = 100  # = monitor.reference_window: hours 0-4
HEALTHY_RUNS = 20  # hourly runs on unchanged traffic: hours 5-24
SWITCH_HOUR = REFERENCE // PER_HOUR + HEALTHY_RUNS  # 25: s2s from its 30th minute
POST_RUNS = 3  # hours 25 (half-switched), 26 and 27 (all s2s)
SEED = 24


def _summaries(system: str) -> list[dict]:
    rows = [r for _, r in read_jsonl(FRANK / "summaries.jsonl") if r.get("system") == system]
    return sorted(rows, key=lambda r: r["doc_id"])


def _stream() -> list[dict]:
    """Every sample the scenario serves, in order: bart's summaries in seeded permutations of
    all 250 (an unchanged stream), then, from the middle of SWITCH_HOUR, s2s's."""
    rng = random.Random(SEED)
    bart, s2s = _summaries("bart"), _summaries("s2s")
    switch = SWITCH_HOUR * PER_HOUR + PER_HOUR // 2
    stream: list[dict] = []
    while len(stream) < switch:
        stream += rng.sample(bart, len(bart))
    after = rng.sample(s2s, len(s2s))
    return stream[:switch] + after[: (SWITCH_HOUR + POST_RUNS) * PER_HOUR - switch]


@pytest.fixture(scope="module")
def frank() -> Path:
    if not (FRANK / "documents.jsonl").is_file() or not (FRANK / "summaries.jsonl").is_file():
        pytest.skip(f"frank_cnndm is not on this machine ({FRANK}: ../shared/data/external)")
    return FRANK


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One verdict cache for the module: the PostgreSQL run reuses the SQLite run's verdicts."""
    return tmp_path_factory.mktemp("verdicts")


@pytest.fixture()
def store_url(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty store: SQLite, or ("postgresql") a fresh database on HSS_TEST_POSTGRES_URL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    from tests.integration import test_samples_postgres as postgres

    if not postgres.POSTGRES_URL:
        pytest.skip(
            "HSS_TEST_POSTGRES_URL is not set: no PostgreSQL server for the hourly scenario "
            '(start one with `eval "$(scripts/postgres.sh start)"`; .ci/run does this)'
        )
    yield from postgres.store_url.__wrapped__()


@pytest.fixture(scope="module")
def invented_toolkit(real_toolkit, real_settings):
    """The real toolkit with the `invented-sbert` checker. This scenario was built for it (44%
    of bart's summaries flagged, 91% of s2s's). The default `entail` flags 8% and 26%: at 20
    samples a window and alpha 0.001 it would need 8 of 20 flagged, so the switch would mostly
    go unseen (docs/MONITORING.md)."""
    from hss_gate.scoring.toolkit import real_toolkit as build

    consistency = real_settings.consistency.model_copy(update={"model": "invented-sbert"})
    return build(real_settings.model_copy(update={"consistency": consistency}))


@pytest.fixture()
def hss(tmp_path, monkeypatch, store_url, frank, cache_dir, invented_toolkit):
    """(ingest(hour, rows), monitor() -> (exit code, monitor.json, seconds)) on `store_url`,
    through the command line, with the real toolkit built once."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_CONSISTENCY__MODEL", "invented-sbert")
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(cache_dir))
    # the absolute floor (the production reference corpus) is not what this test is about: a
    # copy without its metrics.json, so its checker is not compared with this one
    floor = tmp_path / "baseline" / "production_scores.csv"
    floor.parent.mkdir()
    shutil.copy(REPO / "data" / "baseline" / "production_scores.csv", floor)
    monkeypatch.setenv("HSS_MONITOR__REFERENCE", str(floor))
    monkeypatch.setenv("HSS_MONITOR__REFERENCE_WINDOW", str(REFERENCE))
    monkeypatch.setenv("HSS_MONITOR__SAMPLE_SIZE", str(PER_HOUR))
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", lambda settings: invented_toolkit)
    runner, out = CliRunner(), tmp_path / "monitor"

    def ingest(first: int, rows: list[dict]) -> None:
        """rows as samples first, first + 1, ... (one every 3 minutes), via a summaries file."""
        path = tmp_path / f"traffic-{first}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for k, row in enumerate(rows, start=first):
                record = {
                    "sample_id": f"{row['system']}-{k:04d}/{row['doc_id']}",
                    "doc_id": row["doc_id"],
                    "system": row["system"],
                    "summary": row["summary"],
                    "timestamp": (T0 + timedelta(minutes=3 * k)).isoformat(),
                }
                f.write(json.dumps(record) + "\n")
        result = runner.invoke(
            app,
            [
                "samples",
                "ingest",
                str(path),
                "--corpus",
                str(frank / "documents.jsonl"),
                "--model-id",
                MODEL_ID,
                "--samples",
                store_url,
            ],
        )
        assert result.exit_code == 0, result.output
        assert f"ingested {len(rows)} samples" in result.output

    def monitor() -> tuple[int, dict, float]:
        start = time.perf_counter()
        result = runner.invoke(
            app, ["monitor", "--served-only", "--samples", store_url, "--out", str(out)]
        )
        seconds = time.perf_counter() - start
        assert "Traceback" not in result.output, result.output
        return result.exit_code, json.loads((out / "monitor.json").read_text()), seconds

    return ingest, monitor, store_url


def _flagged(report: dict) -> dict:
    return {t["signal"]: t for t in report["windows"]["tests"]}


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
def test_hourly_runs_on_frank_traffic_stay_healthy_then_see_the_switch_to_s2s(
    hss, invented_toolkit
):
    ingest, monitor, url = hss
    stream = _stream()

    def hour(h: int) -> None:
        ingest(h * PER_HOUR, stream[h * PER_HOUR : (h + 1) * PER_HOUR])

    for h in range(REFERENCE // PER_HOUR):  # hours 0-4: the reference window, bart
        hour(h)
    code, report, _ = monitor()  # the newest 20 are in the reference: no current window yet
    assert (code, report["decision"]) == (3, "insufficient_data"), report["reasons"]

    # Unchanged traffic. The default windows' measured false-alarm rate is 0.08% per run
    # [0.05%, 0.12%] (docs/MONITORING.md, 24,000 simulated runs resampling bart): 20 runs alarm
    # with probability ~1.6%, and the seed fixes the traffic, so this is deterministic enough.
    healthy, seconds = [], []
    for h in range(REFERENCE // PER_HOUR, SWITCH_HOUR):
        hour(h)
        code, report, took = monitor()
        seconds.append(took)
        assert (code, report["decision"]) == (0, "healthy"), (h, report["reasons"])
        assert report["windows"]["status"] == "compared"
        assert report["windows"]["reference"]["n"] == REFERENCE
        assert report["windows"]["current"]["n"] == PER_HOUR
        healthy.append(_flagged(report))
    assert len(healthy) == HEALTHY_RUNS

    after = []
    for h in range(SWITCH_HOUR, SWITCH_HOUR + POST_RUNS):  # s2s from the middle of hour 25
        hour(h)
        code, report, took = monitor()
        seconds.append(took)
        after.append((h, code, report["decision"], _flagged(report)))
    half, first, *rest = after
    # half-switched (10 + 10): power too low to assert anything but that it was compared
    assert half[3]["live_low_consistency"]["n_current"] == PER_HOUR
    # the first run whose current window is mostly post-switch (all 20 are s2s) is unhealthy
    for h, code, decision, tests in (first, *rest):
        assert (code, decision) == (1, "unhealthy"), (h, tests)
    assert any(t["worse"] and t.get("blocking", True) for t in first[3].values())
    assert any("model's reference window" in r for r in report["reasons"])

    # the recorded runs show the trend: the current window's flagged share rose
    with SampleStore(url) as store:
        runs = store.runs(100)[::-1]
        stored = store.reference(MODEL_ID)
    assert [r.decision for r in runs] == (
        ["insufficient_data"] + ["healthy"] * HEALTHY_RUNS + [d for _, _, d, _ in after]
    )
    shares = [r.details["unsupported_share"] for r in runs[1:]]
    before_mean = sum(shares[:HEALTHY_RUNS]) / HEALTHY_RUNS
    after_shares = shares[HEALTHY_RUNS + 1 :]  # the all-s2s windows
    assert before_mean < min(after_shares)
    assert runs[HEALTHY_RUNS + 2].details["p_values"] == {
        s: t["p_value"] for s, t in first[3].items()
    }
    # the reference window was scored once, by this checker, and stored
    assert stored["checker"] == invented_toolkit.checker.fingerprint
    assert len(stored["sample_ids"]) == REFERENCE
    assert stored["sample_ids"][0].startswith("bart-0000/")

    low = "live_low_consistency"
    print(
        f"\n[{url.split(':')[0]}] checker {stored['checker']}\n"
        f"reference flagged share {healthy[0][low]['reference_mean']:.3f}; "
        f"hourly current windows before the switch: mean {before_mean:.3f}, "
        f"range {min(shares[:HEALTHY_RUNS]):.2f}-{max(shares[:HEALTHY_RUNS]):.2f}, "
        f"min p {min(min(t['p_value'] for t in r.values()) for r in healthy):.4f}\n"
        f"half-switched: {half[2]}, "
        + ", ".join(f"{s} {t['current_mean']:.2f} p={t['p_value']:.4g}" for s, t in half[3].items())
        + "\nfirst post-switch: "
        + ", ".join(
            f"{s} {t['reference_mean']:.2f}->{t['current_mean']:.2f} p={t['p_value']:.4g}"
            for s, t in first[3].items()
        )
        + f"\nafter-switch shares {[round(s, 2) for s in after_shares]}\n"
        f"per-run seconds: first compared {seconds[0]:.1f}, median "
        f"{sorted(seconds)[len(seconds) // 2]:.1f}, max {max(seconds):.1f}, "
        f"total {sum(seconds):.1f} for {len(seconds)} runs: {[round(x, 1) for x in seconds]}"
    )
