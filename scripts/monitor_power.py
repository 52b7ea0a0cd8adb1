"""The windowed monitor's false-alarm rate and power, simulated from scored traffic (issue 24).

usage:
  python scripts/monitor_power.py score [FRANK_DIR] [OUT_CSV]
      score frank_cnndm's served summaries (5 systems x 250 documents) with the real checker
      and entity tagger once: OUT_CSV (default outputs/monitor_power/signals.csv) gets each
      summary's served signals; prints the throughput (summaries per hour on this machine).
  python scripts/monitor_power.py simulate [OUT_CSV] [--runs 2400] [--system bart]
                                           [--current 20,50] [--alpha 0.001]
      resample an unchanged stream of one system's scored summaries: the per-run and per-day
      (24 hourly runs) false-alarm rate of the blocking window comparison (the reported tests
      never make a run unhealthy and are not simulated) at the configured window sizes and
      alpha, with 95% Wilson CIs; then the power against a drop of the consistent-summary
      share (healthy summaries replaced by flagged ones) and the smallest drop seen with 80%;
      --current: other current window sizes (default monitor.sample_size), --alpha another
      alpha (default monitor.window_alpha).

The simulation draws windows with replacement from one system's 250 scored summaries: the
reference window once per simulated day, then 24 disjoint current windows (hourly runs whose
windows do not overlap, the worst case for a day's false alarms: independent tests).
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

FRANK = Path("/work/shared/data/external/frank_cnndm")
SIGNALS = Path("outputs/monitor_power/signals.csv")


def score(frank: Path, out: Path) -> None:
    import pandas as pd

    from hss_gate.monitoring.store import Sample
    from hss_gate.scoring.runner import LocalRunner
    from hss_gate.settings import load_settings
    from hss_gate.workflows.monitor_windows import served_signals

    settings = load_settings("params.yaml")
    docs = {}
    for line in (frank / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        docs[record["doc_id"]] = record["document"]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    samples, labels = [], []
    for i, line in enumerate((frank / "summaries.jsonl").read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        samples.append(
            Sample(
                sample_id=f"{record['system']}/{record['doc_id']}",
                document=docs[record["doc_id"]],
                summary=record["summary"],
                model_id=record["system"],
                timestamp=start + timedelta(minutes=i),
            )
        )
        labels.append(record.get("factual"))
    tools = LocalRunner().toolkit(settings)
    began = time.perf_counter()
    rows = served_signals(samples, tools, settings)
    seconds = time.perf_counter() - began
    from hss_gate.monitoring.rules import WINDOW_COLUMNS

    # every window column (the reported tests' too), though `simulate` measures the blocking ones
    frame = pd.DataFrame(rows)
    # live_any_unsupported is derived from live_unsupported_share when the windows are tested
    columns = ["doc_id", "model_id", *(c for c in WINDOW_COLUMNS if c in frame)]
    frame = frame[columns]
    frame["factual"] = labels
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    print(
        f"scored {len(samples)} summaries in {seconds:.0f} s: "
        f"{len(samples) / seconds * 3600:.0f} summaries/hour "
        f"(checker {tools.checker.fingerprint}; cached runs are faster)"
    )
    print(frame.groupby("model_id")[[*columns[2:], "factual"]].mean())


def _wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _draw(rng: random.Random, pool: list[dict], n: int) -> list[dict]:
    return [rng.choice(pool) for _ in range(n)]


def _degrade(rng: random.Random, window: list[dict], drop: float, bad: list[dict]) -> list[dict]:
    """Each summary of the window is, with probability `drop`, replaced by a flagged one (the
    consistent share falls by `drop` times the healthy share)."""
    return [rng.choice(bad) if rng.random() < drop else row for row in window]


def _note(reference: list[dict], current: list[dict], alpha: float) -> bool:
    """Whether any reported (never blocking) window test is significant at `alpha`."""
    from hss_gate.monitoring.rules import compare_reported_windows, window_signal_values

    tests = compare_reported_windows(
        window_signal_values(reference), window_signal_values(current), alpha
    )
    return any(t["worse"] for t in tests)


def _alarm(reference: list[dict], current: list[dict], alpha: float) -> bool:
    from hss_gate.monitoring.rules import blocking_signal_values, compare_blocking_windows

    # the blocking tests only: the reported ones never make a run unhealthy
    tests = compare_blocking_windows(
        blocking_signal_values(reference), blocking_signal_values(current), alpha
    )
    return any(t["worse"] and t["blocking"] for t in tests)


def simulate(
    path: Path, runs: int, system: str, sizes: list[int] | None = None, alpha: float | None = None
) -> None:
    """The false alarms at the configured sizes, then the power table for each current size."""
    import pandas as pd

    from hss_gate.settings import load_settings

    monitor = load_settings("params.yaml").monitor
    frame = pd.read_csv(path)
    alpha = alpha or monitor.window_alpha
    for size in sizes or [monitor.sample_size]:
        _simulate(frame, runs, system, monitor.reference_window, size, alpha)
        _notes(frame, runs, system, monitor.reference_window, size, monitor.reported_alpha)
        print()


def _notes(frame, runs: int, system: str, n_ref: int, n_cur: int, alpha: float) -> None:
    """How often an unchanged stream gets a reported note (any reported test at `alpha`)."""
    missing = [c for c in ("live_consistency", "live_n_words") if c not in frame]
    if missing:
        print(f"reported notes: not simulated ({', '.join(missing)} not scored; rerun `score`)")
        return
    pool = frame[frame["model_id"] == system].to_dict("records")
    rng = random.Random(1)
    hits = sum(_note(_draw(rng, pool, n_ref), _draw(rng, pool, n_cur), alpha) for _ in range(runs))
    low, high = _wilson(hits, runs)
    print(
        f"runs of an unchanged stream with any reported note (alpha {alpha} per reported "
        f"test): {hits}/{runs} = {hits / runs:.4f} [{low:.4f}, {high:.4f}]"
    )


def _simulate(frame, runs: int, system: str, n_ref: int, n_cur: int, alpha: float) -> None:
    pool = frame[frame["model_id"] == system].to_dict("records")
    bad = frame[frame["live_low_consistency"]].to_dict("records")
    base = sum(r["live_low_consistency"] for r in pool) / len(pool)
    print(f"traffic: {system}, {len(pool)} summaries, {base:.1%} flagged by the checker")
    print(f"windows: reference {n_ref}, current {n_cur}, alpha {alpha} per signal, {runs} runs")
    rng = random.Random(0)
    alarms = days_alarmed = 0
    days = max(1, runs // 24)
    for _ in range(days):
        reference = _draw(rng, pool, n_ref)
        day = False
        for _ in range(24):
            if _alarm(reference, _draw(rng, pool, n_cur), alpha):
                alarms += 1
                day = True
        days_alarmed += day
    total = days * 24
    low, high = _wilson(alarms, total)
    dlow, dhigh = _wilson(days_alarmed, days)
    print(f"false alarms per run: {alarms}/{total} = {alarms / total:.4f} [{low:.4f}, {high:.4f}]")
    print(
        f"days of 24 hourly runs with any false alarm: {days_alarmed}/{days} = "
        f"{days_alarmed / days:.3f} [{dlow:.3f}, {dhigh:.3f}]"
    )
    print("| drop in the share the checker finds consistent | flagged share after | power |")
    print("|---|---|---|")
    found = None
    for step in range(1, 21):
        drop = round(step * 0.05, 2)
        if drop > 1 - base + 1e-9:
            break
        hits = 0
        n = max(200, runs // 4)
        for _ in range(n):
            reference = _draw(rng, pool, n_ref)
            current = _degrade(rng, _draw(rng, pool, n_cur), drop / (1 - base), bad)
            hits += _alarm(reference, current, alpha)
        print(f"| {drop:.2f} | {base + drop:.2f} | {hits / n:.2f} |")
        if found is None and hits / n >= 0.8:
            found = drop
    print(f"smallest drop detected with 80% power: {found}")
    for other in sorted(set(frame["model_id"]) - {system}):  # a real switch of summarizer
        after = frame[frame["model_id"] == other].to_dict("records")
        n = max(200, runs // 4)
        hits = sum(
            _alarm(_draw(rng, pool, n_ref), _draw(rng, after, n_cur), alpha) for _ in range(n)
        )
        flagged = sum(r["live_low_consistency"] for r in after) / len(after)
        print(f"switch to {other} ({flagged:.1%} flagged): unhealthy in {hits / n:.2f} of runs")
    labelled = frame.dropna(subset=["factual"])
    if found is not None and len(labelled):
        flags = labelled["live_low_consistency"].astype(bool)
        caught = flags[labelled["factual"] == 0].mean()  # unfaithful summaries flagged
        false = flags[labelled["factual"] == 1].mean()  # faithful summaries flagged
        print(
            f"checker on the human labels: flags {caught:.1%} of unfaithful and {false:.1%} of "
            f"faithful summaries; a drop d of the truly consistent share raises the flagged "
            f"share by d x {caught - false:.3f}, so the smallest true drop seen with 80% power "
            f"is {min(found / (caught - false), 1.0):.2f}"
            if caught > false
            else "checker on the human labels: it does not flag unfaithful summaries more often"
        )


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in ("score", "simulate") or {"-h", "--help"} & set(argv):
        raise SystemExit(__doc__)
    if argv[0] == "score":
        frank = Path(argv[1]) if len(argv) > 1 else FRANK
        score(frank, Path(argv[2]) if len(argv) > 2 else SIGNALS)
        return
    rest = argv[1:]
    options = {"--runs": "2400", "--system": "bart", "--current": "", "--alpha": ""}
    positional = []
    while rest:
        item = rest.pop(0)
        if item in options:
            options[item] = rest.pop(0)
        else:
            positional.append(item)
    simulate(
        Path(positional[0]) if positional else SIGNALS,
        int(options["--runs"]),
        options["--system"],
        [int(n) for n in options["--current"].split(",") if n],
        float(options["--alpha"]) if options["--alpha"] else None,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
