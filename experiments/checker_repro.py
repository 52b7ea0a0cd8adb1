"""Does the checker's training reproduce byte for byte on this machine? Two short runs of the
real recipe (the shipped stage's first `--pairs` pairs, the embedded MiniLM, params.yaml
`checker`'s seed, threads and optimisation), one of them interrupted and resumed, compared by
sha256 of the adapter they write (issue 33; docs/FACTUALITY.md).

    PYTHONPATH=. .venv/bin/python experiments/checker_repro.py [--pairs 320]
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from hss_gate.consistency.entailment import AdapterConfig, embedded_base_dir
from hss_gate.consistency.entailment_training import TrainSettings, train_adapter
from hss_gate.settings import load_settings
from hss_gate.workflows.checker import edit_tools, snli_sdist, stage_pairs


class Stop(Exception):
    """Raised by the progress callback to interrupt a run after some steps."""


def interrupting(after: int):
    """A progress callback that stops training once `after` steps are done."""
    done = [0]

    def stage(name: str, total: int, start: int):
        def advance(n: int) -> None:
            done[0] += n
            if done[0] >= after:
                raise Stop(f"interrupted after {done[0]} steps")

        return advance

    return stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=320)
    parser.add_argument("--stop-after", type=int, default=7, help="steps before the interruption")
    args = parser.parse_args()
    settings = load_settings("params.yaml")
    checker = settings.checker
    stage = checker.stages[0]  # the first stage's pairs, as `hss checker train` builds them
    sdist = snli_sdist(checker.data_dir) if stage.snli_pairs else None
    pairs = stage_pairs(stage, checker.seed + 1000, edit_tools(settings), sdist)[: args.pairs]
    config = AdapterConfig(
        rank=checker.rank, alpha=checker.alpha, max_length=checker.max_length, marks=checker.marks
    )
    train = TrainSettings(
        seed=checker.seed,
        batch_size=checker.batch_size,
        learning_rate=stage.learning_rate,
        threads=checker.threads,
        checkpoint_every=5,
        pair_margin=checker.pair_margin,
    )
    digests = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in ("uninterrupted", "resumed"):
            out, checkpoints = Path(tmp) / f"{run}.safetensors", Path(tmp) / f"{run}-ckpt"
            if run == "resumed":
                try:
                    train_adapter(
                        pairs,
                        embedded_base_dir(),
                        config,
                        train,
                        out,
                        checkpoints,
                        interrupting(args.stop_after),
                    )
                except Stop as stopped:
                    print(f"{run}: {stopped}")
            train_adapter(pairs, embedded_base_dir(), config, train, out, checkpoints)
            digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
            print(f"{run}: {len(pairs)} pairs, adapter sha256 {digests[-1]}")
    print("byte-identical" if digests[0] == digests[1] else "DIFFERENT")
    return 0 if digests[0] == digests[1] else 1


if __name__ == "__main__":
    raise SystemExit(main())
