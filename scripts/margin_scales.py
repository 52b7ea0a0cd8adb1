"""The consistency margin in three units, replayed side by side (issue 55, item 2).

`gate.consistency_margin_scale`: `checker` (the checker's mean support), `standardized`
(production's per-document standard deviation of it on the gate's documents) or `relative` (a
share of production's mean of it). For each scale and margin this replays the gate's own rule
(hss_gate.research.systems.gate_call, sequential as `hss gate`) on:

- frank_cnndm's five systems, every ordered pair (the development half; the checker did not
  train on FRANK): must-block pairs blocked and must-promote pairs blocked;
- each `--pair NAME=CANDIDATE_CSV:PRODUCTION_CSV`, two documents.csv files scored on the same
  documents (e.g. SmolLM2 against production on the reference corpus, production against
  itself), with what the gate must do (`--must NAME=block|promote`);
- each `--self-noise NAME=SCORE_DIR`, one `hss score` output: the model against itself reading
  a meaning-preserving rewording of each document (perturbations.csv, one pair a strength
  band; every summary checked against the original document), which the gate must promote.
  Greedy decoding makes a model against itself identical; this is its noise.

Prints one table (figures, not assertions):

    HF_HUB_OFFLINE=1 python scripts/margin_scales.py \\
        --frank ../shared/data/external/frank_cnndm --cache-dir /tmp/sys-cache \\
        --pair smollm2=CANDIDATE/documents.csv:data/baseline/reference/documents.csv \\
        --must smollm2=block   # CANDIDATE: outputs/quickstart/candidate after `make quickstart`
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from hss_gate.common.cache import Cache
from hss_gate.research.systems import (
    agreement,
    evaluate_pairs,
    gate_call,
    read_documents,
    read_judgements,
    read_summaries,
)
from hss_gate.research.systems_run import SystemsRequest, build_checker, measure
from hss_gate.settings import load_settings

GRID = {
    "checker": (0.05, 0.07, 0.10, 0.13),
    "standardized": (0.25, 0.35, 0.45, 0.55),
    "relative": (0.07, 0.10, 0.14, 0.18),
}
"""Around today's default: 0.10 in checker units is 0.45 of production's per-document standard
deviation (0.224) and 0.14 of its mean (0.715) on the reference corpus."""

FLOORS = (0.0, 0.03, 0.05)
"""gate.consistency_margin_floor under the two scaled units (checker units)."""

ROW_COLUMNS = ("base_mean_support", "base_consistency", "base_low_consistency")


def frank_rows(frank: Path, cache_dir: str) -> tuple[dict, dict]:
    """Each system's document rows under the configured checker (cached verdicts) and the
    humans' judgements."""
    from hss_gate.models.language import SpacyTagger

    settings = load_settings()
    request = SystemsRequest(
        summaries=frank / "summaries.jsonl", documents=frank / "documents.jsonl", out=Path(".")
    )
    cache = Cache(cache_dir)
    try:
        checker, _ = build_checker(settings, request, cache)
        rows = measure(
            read_documents(request.documents),
            read_summaries(request.summaries),
            checker,
            SpacyTagger(),
            cache,
        )
    finally:
        cache.close()
    return rows, read_judgements(request.summaries)


def csv_rows(path: str) -> list[dict]:
    frame = pd.read_csv(path)
    keep = ["doc_id", "category", "base_unsupported_share", *ROW_COLUMNS]
    return frame[[c for c in keep if c in frame]].to_dict("records")


def self_noise_pairs(name: str, score_dir: Path) -> dict[str, tuple[list, list]]:
    """The model's summaries of the reworded documents (one strength band a pair) against its
    summaries of the originals, as documents.csv rows."""
    production = csv_rows(str(score_dir / "documents.csv"))
    frame = pd.read_csv(score_dir / "perturbations.csv")
    frame = frame[frame["index"] == 0]
    renamed = {
        f"summary_{c.removeprefix('base_')}": c for c in ("base_unsupported_share", *ROW_COLUMNS)
    }
    pairs = {}
    for strength, band in frame.groupby("strength", sort=False):
        candidate = band.rename(columns=renamed)[["doc_id", "category", *renamed.values()]]
        pairs[f"{name} {strength}"] = (candidate.to_dict("records"), production)
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frank", type=Path)
    parser.add_argument("--cache-dir", default=".hss/cache")
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--must", action="append", default=[])
    parser.add_argument("--self-noise", action="append", default=[])
    args = parser.parse_args(argv)
    settings = load_settings()
    pairs = {}
    for spec in args.pair:
        name, _, files = spec.partition("=")
        candidate, _, production = files.partition(":")
        pairs[name] = (csv_rows(candidate), csv_rows(production))
    must = dict(spec.partition("=")[::2] for spec in args.must)
    for spec in args.self_noise:
        name, _, folder = spec.partition("=")
        noise = self_noise_pairs(name, Path(folder))
        pairs |= noise
        must |= dict.fromkeys(noise, "promote")
    frank = frank_rows(args.frank, args.cache_dir) if args.frank else None
    head = ["scale", "margin", "floor"]
    if frank:
        head += ["frank worse blocked", "frank better blocked", "frank neither blocked"]
    head += [f"{name} (must {must.get(name, '?')})" for name in pairs]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    grid = [
        (scale, value, floor)
        for scale, values in GRID.items()
        for floor in ((0.0,) if scale == "checker" else FLOORS)
        for value in values
    ]
    for scale, value, floor in grid:
        gate = settings.gate.model_copy(
            update={
                "consistency_margin": value,
                "consistency_margin_scale": scale,
                "consistency_margin_floor": floor,
            }
        )
        cells = [scale, f"{value:g}", "" if scale == "checker" else f"{floor:g}"]
        if frank:
            rows, judgements = frank
            counts = agreement(evaluate_pairs(rows, judgements, gate))
            better_blocked = counts["better"] - counts["better_promoted"]
            cells += [
                f"{counts['worse_blocked']}/{counts['worse']}",
                f"{better_blocked}/{counts['better']}",
                f"{counts['neither_blocked']}/{counts['neither']}",
            ]
        for candidate, production in pairs.values():
            call = gate_call(candidate, production, gate, confidence=settings.score.confidence)
            cells.append(f"{call.decision} at {call.documents}")
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
