"""Leave-one-set-out training of the `entail` checker (docs/FACTUALITY.md, issue 54).

    PYTHONPATH=. .venv/bin/python scripts/checker_folds.py train [--domains podcast,...] \
        [--prefix fold_] [--stage-set splits=[evaluation,test] --stage-set unique_pairs=true] \
        [--stages recipe.yaml] [--resume-from 'outputs/checker_folds/fold_{held}.checkpoints'] \
        [--set rank=0 --stage-set learning_rate=5e-5]
    PYTHONPATH=. .venv/bin/python scripts/checker_folds.py score [--domains ...]

`train` writes, for each left-out set (a SummEdits domain, or qags, factcc, summeval), params.yaml
with that set's file taken out of every `checker` stage (its labelled rows and its seed
documents alike) and its documents added to every stage's `exclude_documents` (the CNN/DM sets
share articles), and the fold's adapter and checkpoints under outputs/checker_folds/, then runs
`hss checker train` on it. `--stages` replaces params.yaml's stages by a YAML list (a recipe
tried on the folds); `--resume-from` copies a checkpoint folder in first (`{held}` replaced), so
a recipe whose first stage is an earlier fold's whole recipe resumes past it.
`score` scores the fold adapter on all rows of its left-out domain and on production's reference
summaries with scripts/checker_benchmark.py (label `<prefix><domain>`), for
`checker_benchmark.py lodo --prefix <prefix>`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "outputs" / "checker_folds"
DATA = "../shared/data/external"
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr")
SET_FILES = {
    **{domain: f"summedits/summedits_{domain}.json" for domain in DOMAINS},
    "qags": "qags_mturk_cnndm.jsonl",
    "factcc": "summac_factcc.json",
    "summeval": "summac_summeval.json",
}


def fold_params(
    held: str,
    prefix: str,
    stage_set: dict[str, object] | None = None,
    stages: list[dict] | None = None,
    checker_set: dict[str, object] | None = None,
) -> Path:
    """params.yaml with `held`'s file out of every checker stage and, for a CNN/DM set, its
    documents excluded from every stage; `stages` replace params.yaml's, `stage_set`'s keys are
    set in every stage (a recipe tried on the folds, e.g. splits, unique_pairs, epochs) and
    `checker_set`'s in `checker` itself (e.g. rank)."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    checker = params["checker"]
    checker.update(checker_set or {})
    if stages is not None:
        checker["stages"] = stages
    name = SET_FILES[held]
    for stage in checker["stages"]:
        stage["documents"] = [d for d in stage.get("documents", []) if name not in d["path"]]
        stage["labelled"] = [p for p in stage.get("labelled", []) if name not in p]
        if held not in DOMAINS:
            stage["exclude_documents"] = [*stage.get("exclude_documents", []), f"{DATA}/{name}"]
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
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=YAML",
        help="set a key of `checker` itself, e.g. rank=0 (full fine-tuning; repeatable)",
    )
    parser.add_argument("--stages", type=Path, help="a YAML list of checker stages")
    parser.add_argument("--resume-from", help="a checkpoint folder to copy in ({held})")
    args = parser.parse_args()
    hss = str(REPO / ".venv" / "bin" / "hss")
    for held in args.domains.split(","):
        if args.command == "train":
            overrides = dict(item.split("=", 1) for item in args.stage_set)
            recipe = {key: yaml.safe_load(value) for key, value in overrides.items()}
            stages = yaml.safe_load(args.stages.read_text()) if args.stages else None
            checker_set = {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in args.set)}
            params = fold_params(held, args.prefix, recipe, stages, checker_set)
            target = OUT / f"{args.prefix}{held}.checkpoints"
            if args.resume_from and not target.exists():
                shutil.copytree(REPO / args.resume_from.format(held=held), target)
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
