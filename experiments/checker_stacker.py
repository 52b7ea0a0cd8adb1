"""Does a small stacker over what an uncased encoder cannot see raise the left-out figures?
(issue 54, item 3; docs/FACTUALITY.md)

    PYTHONPATH=. .venv/bin/python experiments/checker_stacker.py [--prefix fold_]

For every SummEdits development domain it reads the fold adapter's sentence scores on that
domain (scripts/checker_folds.py score: an adapter that never saw the domain), adds features of
the summary against its document - the share of its named entities (spaCy, original case) and
of its numbers (written as digits or words) the document lacks, negation parity with the
closest source sentence, and the word-novelty features of `consistency/novelty.py` - and fits a
logistic stacker leave one domain out: fitted on three domains' out-of-fold rows, scored on the
fourth. Prints each domain's ROC AUC for the adapter alone (aggregate min) and for the stacker.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

NEGATIONS = re.compile(r"\b(not|no|never|none|nobody|nothing|neither|nor|without)\b|n't\b", re.I)


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return float(np.log(p / (1 - p)))


def summary_features(document: str, summary: str, scores: list[float], nlp, source) -> list[float]:
    """The stacker's inputs for one summary (see the module docstring)."""
    from hss_gate.consistency.novelty import novelty_features, sentence_novelty
    from hss_gate.text.sentences import split_sentences

    parsed = nlp(summary)
    entities = [e.text for e in parsed.ents if e.label_ not in {"CARDINAL", "ORDINAL"}]
    missing_entities = [e for e in entities if e not in document]
    sentences = split_sentences(summary)
    novelties = [sentence_novelty(s, source, None) for s in sentences]
    novelty = novelty_features(novelties)
    parity = [
        bool(NEGATIONS.search(s)) != bool(NEGATIONS.search(n.passage))
        for s, n in zip(sentences, novelties, strict=True)
    ]
    values = scores or [1.0]
    return [
        _logit(min(values)),
        _logit(float(np.mean(values))),
        len(missing_entities) / len(entities) if entities else 0.0,
        float(bool(missing_entities)),
        float(any(parity)),
        novelty["novel_numbers"],
        novelty["novel_share"],
        novelty["sent_max_wshare"],
        novelty["bigram_novel"],
        novelty["sent_max_bigram"],
    ]


def _checker_benchmark():
    """scripts/checker_benchmark.py as a module (its sets, rows and paths)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "checker_benchmark.py"
    spec = importlib.util.spec_from_file_location("checker_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    cb = _checker_benchmark()
    from hss_gate.consistency.calibration import roc_auc
    from hss_gate.consistency.novelty import prepare
    from hss_gate.consistency.training import fit_logistic

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", default="fold_")
    parser.add_argument("--only", default="", help="feature indices kept (default: all)")
    args = parser.parse_args()
    from hss_gate.models.language import SpacyTagger

    nlp = SpacyTagger().nlp
    sets = cb.labelled_sets(cb.DATA)
    table: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for domain in cb.DOMAINS:
        path = cb.OUT / f"{args.prefix}{domain}.jsonl"
        if not path.exists():
            continue
        scored = {r["key"]: r for r in cb.read_rows(f"{args.prefix}{domain}")}
        x, y = [], []
        sources: dict[str, object] = {}
        for pid, document, summary, label in sets[domain]:
            row = scored.get(f"{domain}/{pid}")
            if row is None:
                continue
            source = sources.setdefault(document, prepare(document))
            x.append(summary_features(document, summary, row["scores"], nlp, source))
            y.append(label)
        table[domain] = (np.array(x), np.array(y))
        print(f"{domain}: {len(y)} rows", file=sys.stderr)
    keep = [int(i) for i in args.only.split(",")] if args.only else None
    names = [f"f{i}" for i in range(next(iter(table.values()))[0].shape[1])]
    found = []
    for held, (x_held, y_held) in table.items():
        x_train = np.vstack([x for d, (x, _) in table.items() if d != held])
        y_train = np.concatenate([y for d, (_, y) in table.items() if d != held])
        columns = keep if keep is not None else list(range(x_train.shape[1]))
        model = fit_logistic(x_train[:, columns], y_train.tolist(), [names[i] for i in columns])
        stacked = model.predict_proba(x_held[:, columns]).tolist()
        alone = roc_auc(y_held.tolist(), x_held[:, 0].tolist())
        auc = roc_auc(y_held.tolist(), list(stacked))
        found.append((alone, auc))
        weights = ", ".join(f"{w:+.2f}" for w in model.coef)
        print(
            json.dumps({"held_out": held, "adapter_min": round(alone, 3), "stacker": round(auc, 3)})
        )
        print(f"  weights (standardized): {weights}", file=sys.stderr)
    alone, stacked = zip(*found, strict=True)
    print(f"adapter alone: mean {np.mean(alone):.3f}, worst {min(alone):.3f}")
    print(f"stacker:       mean {np.mean(stacked):.3f}, worst {min(stacked):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
