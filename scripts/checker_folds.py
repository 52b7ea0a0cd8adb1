"""Leave-one-domain-out training of the `entail` checker (docs/FACTUALITY.md, issue 54).

    PYTHONPATH=. .venv/bin/python scripts/checker_folds.py train [--domains podcast,...] \
        [--prefix fold_] [--stage-set splits=[evaluation,test] --stage-set unique_pairs=true]
    PYTHONPATH=. .venv/bin/python scripts/checker_folds.py score [--domains ...]

`train` writes, for each left-out SummEdits domain, params.yaml with that domain's file taken
out of every `checker` stage (its labelled rows and its seed documents alike) and the fold's
adapter and checkpoints under outputs/checker_folds/, then runs `hss checker train` on it.
`score` scores the fold adapter on all rows of its left-out domain and on production's reference
summaries with scripts/checker_benchmark.py (label `<prefix><domain>`), for
`checker_benchmark.py lodo --prefix <prefix>`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "outputs" / "checker_folds"
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr")


def fold_params(held: str, prefix: str, stage_set: dict[str, object] | None = None) -> Path:
    """params.yaml with `held`'s SummEdits file out of every checker stage, and `stage_set`'s
    keys set in every stage (a recipe tried on the folds, e.g. splits, unique_pairs, epochs)."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    checker = params["checker"]
    name = f"summedits_{held}.json"
    for stage in checker["stages"]:
        stage["documents"] = [d for d in stage.get("documents", []) if name not in d["path"]]
        stage["labelled"] = [p for p in stage.get("labelled", []) if name not in p]
        stage.update(stage_set or {})
    checker["out"] = str(OUT / f"{prefix}{held}.safetensors")
    checker["checkpoint_dir"] = str(OUT / f"{prefix}{held}.checkpoints")
    path = OUT / f"{prefix}{held}.params.yaml"
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("train", "score"))
    parser.add_argument("--domains", default=",".join(DOMAINS))
    parser.add_argument("--prefix", default="fold_")
    parser.add_argument(
        "--stage-set",
        action="append",
        default=[],
        metavar="KEY=YAML",
        help="set a key in every checker stage, e.g. splits=[evaluation,test] (repeatable)",
    )
    args = parser.parse_args()
    hss = str(REPO / ".venv" / "bin" / "hss")
    for held in args.domains.split(","):
        if args.command == "train":
            overrides = dict(item.split("=", 1) for item in args.stage_set)
            recipe = {key: yaml.safe_load(value) for key, value in overrides.items()}
            params = fold_params(held, args.prefix, recipe)
            subprocess.run([hss, "checker", "train", "--params", str(params)], check=True)
        else:
            adapter = OUT / f"{args.prefix}{held}.safetensors"
            command = [sys.executable, str(REPO / "scripts" / "checker_benchmark.py"), "score"]
            command += ["--label", f"{args.prefix}{held}", "--adapter", str(adapter)]
            command += ["--sets", f"{held},production"]
            subprocess.run(command, check=True, env=dict(os.environ) | {"PYTHONPATH": str(REPO)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
