"""Does the checker's training reproduce byte for byte on this machine? Two short runs of the
real recipe (the shipped stage's first `--pairs` pairs, the embedded MiniLM, params.yaml
`checker`'s seed, threads and optimisation), one of them interrupted and resumed, compared by
sha256 of the adapter they write (issue 33; docs/FACTUALITY.md).

    PYTHONPATH=. .venv/bin/python scripts/checker_repro.py [--pairs 320]
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from hss_gate.consistency.entailment import AdapterConfig, embedded_base_dir
from hss_gate.consistency.entailment_training import TrainSettings, train_adapter
from hss_gate.settings import load_settings
from hss_gate.workflows.checker import snli_sdist, training_pairs


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
    settings = load_settings("params.yaml").checker
    pairs = training_pairs(settings, snli_sdist(settings.data_dir))[: args.pairs]
    config = AdapterConfig(rank=settings.rank, alpha=settings.alpha, max_length=settings.max_length)
    train = TrainSettings(
        seed=settings.seed,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        threads=settings.threads,
        checkpoint_every=5,
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
