"""Training data and training of the FactCC-style checker: weakly supervised synthetic claims
from documents that are not evaluation data, the logistic classifier and the Conv head."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate.common.errors import InputError
from hss_gate.consistency.aggregation import fit_conv, sigmoid, summac_zs
from hss_gate.consistency.calibration import balanced_accuracy, roc_auc
from hss_gate.consistency.features import FEATURES, STOP_WORDS, tokens
from hss_gate.consistency.model import Encode, FactccModel, FactccWeights, LogisticModel
from hss_gate.text.sentences import split_sentences


def fit_logistic(
    x: np.ndarray, y: Sequence[int], features: Sequence[str], l2: float = 1e-2
) -> LogisticModel:
    """L2-regularized logistic regression on standardized features (L-BFGS)."""
    from scipy.optimize import minimize

    x = np.asarray(x, dtype=float)
    t = np.asarray(y, dtype=float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    n = len(t)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        p = np.clip(sigmoid(z @ w + b), 1e-9, 1 - 1e-9)
        nll = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p)) + l2 * float(w @ w)
        r = (p - t) / n
        return nll, np.append(z.T @ r + 2 * l2 * w, r.sum())

    theta = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B").x
    return LogisticModel(
        tuple(features),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in theta[:-1]),
        float(theta[-1]),
    )


PRONOUN_SWAPS = {
    "he": "she",
    "she": "he",
    "him": "her",
    "his": "her",
    "her": "his",
    "they": "he",
    "their": "his",
    "we": "they",
    "our": "their",
}

_AUXILIARIES = re.compile(
    r"\b(is|are|was|were|will|would|can|could|has|have|had|does|do|did|should|must|may)\b"
    r"(?!\s+not|n't|'t)",
    re.IGNORECASE,
)

_CONTRACTED = re.compile(r"\b(?:(can)(?:'t|not)|(wo)n't)\b", re.IGNORECASE)

_NEGATED = re.compile(
    r"\b(is|are|was|were|will|would|could|has|have|had|does|do|did|should)"
    r"(\s+not|n't)\b",
    re.IGNORECASE,
)

POSITIVE_KINDS = ("identity", "lowercase", "drop_clause", "fuse")

NEGATIVE_KINDS = ("entity", "number", "pronoun", "negation")


@dataclass(frozen=True)
class Mention:
    text: str
    label: str


def _replace_once(text: str, old: str, new: str) -> str:
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(old)}(?![A-Za-z0-9])")
    return pattern.sub(new, text, count=1)


def swap_entity(
    sentence: str, mentions: Sequence[Mention], pool: Sequence[Mention], rng: np.random.Generator
) -> str | None:
    """Replace one named entity of the sentence by another of the same type from the pool."""
    named = [m for m in mentions if m.label not in NUMERIC_LABELS]
    for k in rng.permutation(len(named)):
        m = named[int(k)]
        choices = sorted(
            {
                p.text
                for p in pool
                if p.label == m.label and not _same(p.text, m.text) and p.text not in sentence
            }
        )
        if choices:
            return _replace_once(sentence, m.text, choices[int(rng.integers(len(choices)))])
    return None


NUMERIC_LABELS = frozenset({"CARDINAL", "MONEY", "PERCENT", "QUANTITY", "DATE", "TIME", "ORDINAL"})


def _same(a: str, b: str) -> bool:
    ta, tb = set(tokens(a)) - STOP_WORDS, set(tokens(b)) - STOP_WORDS
    return bool(ta & tb)


def swap_number(sentence: str, pool: Sequence[str], rng: np.random.Generator) -> str | None:
    """Change one number: to another number of the document, else by a random factor."""
    numbers = re.findall(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])", sentence)
    if not numbers:
        return None
    old = numbers[int(rng.integers(len(numbers)))]
    others = sorted({n for n in pool if n != old and n not in numbers})
    if others and rng.random() < 0.5:
        new = others[int(rng.integers(len(others)))]
    else:
        value = float(old.replace(",", ""))
        factor = float(rng.choice([0.5, 2, 3, 1.5, 0.25, 10]))
        new_value = value * factor if value else float(rng.integers(2, 20))
        new = str(round(new_value)) if "." not in old else f"{new_value:.1f}"
        if new == old.replace(",", ""):
            new = str(int(new_value) + 1)
    return _replace_once(sentence, old, new)


def swap_pronoun(sentence: str, rng: np.random.Generator) -> str | None:
    """Swap one personal pronoun (he <-> she, his <-> her, ...)."""
    found = [
        m for m in re.finditer(r"\b[A-Za-z]+\b", sentence) if m.group().lower() in PRONOUN_SWAPS
    ]
    if not found:
        return None
    m = found[int(rng.integers(len(found)))]
    new = PRONOUN_SWAPS[m.group().lower()]
    if m.group()[0].isupper():
        new = new.capitalize()
    return sentence[: m.start()] + new + sentence[m.end() :]


def negate(sentence: str) -> str | None:
    """Remove the first negation, or negate the first auxiliary verb."""
    contracted = _CONTRACTED.search(sentence)
    if contracted:
        base = contracted.group(1) or ("Will" if contracted.group(2)[0].isupper() else "will")
        return sentence[: contracted.start()] + base + sentence[contracted.end() :]
    negated = _NEGATED.search(sentence)
    if negated:
        return sentence[: negated.start(2)] + sentence[negated.end(2) :]
    aux = _AUXILIARIES.search(sentence)
    if aux:
        return sentence[: aux.end()] + " not" + sentence[aux.end() :]
    return None


def drop_clause(sentence: str) -> str | None:
    """Drop a trailing clause or a parenthetical (a compression that keeps the facts true)."""
    inner = re.sub(r"\s*\([^)]*\)|\s*,\s*(?:who|which)\b[^,]*,", "", sentence)
    if inner != sentence:
        return inner
    parts = sentence.rsplit(", ", 1)
    if len(parts) == 2 and len(parts[0].split()) >= 6:
        return parts[0].rstrip(",;:") + "."
    return None


def lowercase_tokenized(sentence: str) -> str:
    """The lower-cased, space-tokenized style of CNN/DM summaries in SummaC and FactCC."""
    text = re.sub(r"(?<!\d)([,.])|([,.])(?!\d)|([!?;:()\"])", r" \1\2\3 ", sentence.lower())
    text = re.sub(r"(\w)'s\b", r"\1 's", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Claim:
    """A weakly supervised training claim for a document (label 1 = consistent)."""

    text: str
    label: int
    kind: str


def synthetic_claims(
    sentences: Sequence[str],
    mentions: Sequence[Sequence[Mention]],
    pool: Sequence[Mention],
    rng: np.random.Generator,
    foreign: Sequence[Mention] = (),
) -> list[Claim]:
    """FactCC's recipe on one document: per sentence a positive (as written, lower-cased and
    tokenized, compressed, or fused with the next sentence) and a negative (an entity swapped
    with one of the same type from this document or, for a quarter of them, another document;
    a number changed; a pronoun swapped; the sentence negated). Both sides get the same surface
    styles, so formatting does not give the label away."""
    numbers = [n for s in sentences for n in re.findall(r"\d+(?:[.,]\d+)*", s)]
    out: list[Claim] = []
    for i, sentence in enumerate(sentences):
        if len(sentence.split()) < 5:
            continue
        kind = POSITIVE_KINDS[int(rng.integers(len(POSITIVE_KINDS)))]
        positive: str | None = sentence
        if kind == "drop_clause":
            positive = drop_clause(sentence)
        elif kind == "fuse" and i + 1 < len(sentences):
            positive = sentence.rstrip(".!? ") + ", and " + _decapitalize(sentences[i + 1])
        if positive is None or (kind == "fuse" and i + 1 >= len(sentences)):
            kind, positive = "identity", sentence
        out.append(Claim(_style(positive, rng), 1, kind))
        for neg_kind in rng.permutation(NEGATIVE_KINDS):
            if neg_kind == "entity":
                source = foreign if foreign and rng.random() < 0.25 else pool
                negative = swap_entity(sentence, mentions[i], source, rng)
            elif neg_kind == "number":
                negative = swap_number(sentence, numbers, rng)
            elif neg_kind == "pronoun":
                negative = swap_pronoun(sentence, rng)
            else:
                negative = negate(sentence)
            if negative and negative != sentence:
                out.append(Claim(_style(negative, rng), 0, str(neg_kind)))
                break
    return out


def synthetic_summaries(
    claims: Sequence[Claim], rng: np.random.Generator, n: int = 8, max_sentences: int = 4
) -> list[tuple[list[str], int]]:
    """Multi-sentence training summaries from one document's claims (for the Conv head):
    1..max_sentences positive claims; in half of them one claim is replaced by a negative
    (label 0, as a summary with one unsupported sentence is inconsistent)."""
    positives = [c.text for c in claims if c.label == 1]
    negatives = [c.text for c in claims if c.label == 0]
    out: list[tuple[list[str], int]] = []
    if not positives:
        return out
    for _ in range(n):
        k = min(int(rng.integers(1, max_sentences + 1)), len(positives))
        chosen = [positives[int(i)] for i in rng.choice(len(positives), k, replace=False)]
        label = 1
        if negatives and rng.random() < 0.5:
            chosen[int(rng.integers(k))] = negatives[int(rng.integers(len(negatives)))]
            label = 0
        out.append((chosen, label))
    return out


def _decapitalize(text: str) -> str:
    first = text.split(" ", 1)[0]
    if first.isalpha() and first[1:].islower() and first.lower() in STOP_WORDS:
        return text[:1].lower() + text[1:]
    return text


def _style(text: str, rng: np.random.Generator) -> str:
    return lowercase_tokenized(text) if rng.random() < 0.5 else text


Tagged = list[tuple[list[str], list[list[Mention]]]]


def tag_documents(nlp: Any, documents: Sequence[str]) -> Tagged:
    """Per document: its sentences and each sentence's spaCy entities (text, label)."""
    out = []
    for text in documents:
        sentences = split_sentences(text)
        mentions = [
            [Mention(e.text, e.label_) for e in doc.ents]
            for doc in nlp.pipe(sentences, batch_size=64)
        ]
        out.append((sentences, mentions))
    return out


@dataclass
class TrainingSet:
    """Synthetic claims, each with its document's index; dev = held-out documents."""

    documents: list[str]
    claims: list[Claim]
    owner: list[int]
    dev: set[int]


def synthetic_training_set(
    tagged: Sequence[tuple[list[str], list[list[Mention]]]],
    seed: int = 13,
    dev_share: float = 0.25,
) -> TrainingSet:
    """FactCC's weakly supervised claims for every document; ``dev_share`` of the documents
    are held out to check the classifier and the Conv head."""
    if len(tagged) < 4:
        raise InputError("training the FactCC-style classifier needs at least 4 documents")
    rng = np.random.default_rng(seed)
    pools = [[m for ms in mentions for m in ms] for _, mentions in tagged]
    claims: list[Claim] = []
    owner: list[int] = []
    for i, (sentences, mentions) in enumerate(tagged):
        foreign = [m for j, pool in enumerate(pools) if j != i for m in pool]
        made = synthetic_claims(sentences, mentions, pools[i], rng, foreign)
        claims += made
        owner += [i] * len(made)
    order = rng.permutation(len(tagged))
    dev = {int(i) for i in order[: max(1, round(dev_share * len(tagged)))]}
    return TrainingSet([" ".join(s) for s, _ in tagged], claims, owner, dev)


def train_factcc(
    tagged: Sequence[tuple[list[str], list[list[Mention]]]],
    encode: Encode,
    seed: int = 13,
    l2: float = 1e-2,
    conv_bins: int = 20,
    progress: Callable[[str], None] = lambda message: None,
) -> FactccWeights:
    """Train the pair classifier on synthetic claims (premise = the whole document, as in
    FactCC) and the Conv head on synthetic multi-sentence summaries, both on the training
    documents only; the held-out documents give the provenance's dev metrics."""
    data = synthetic_training_set(tagged, seed)
    progress(f"{len(data.claims)} synthetic claims from {len(data.documents)} documents")
    model, y_dev, p_dev = _fit_pair_classifier(data, encode, l2)
    progress(f"pair classifier: synthetic dev AUC {roc_auc(y_dev, p_dev):.3f}")
    matrices, lab, is_dev = _summary_matrices(data, model, seed)
    conv = fit_conv(
        [m for m, d in zip(matrices, is_dev, strict=True) if not d],
        lab[~is_dev],
        bins=conv_bins,
        l2=1e-4,
    )
    conv_dev = np.array([conv.score(m) for m, d in zip(matrices, is_dev, strict=True) if d])
    zs_dev = np.array([summac_zs(m) for m, d in zip(matrices, is_dev, strict=True) if d])
    provenance = {
        "seed": seed,
        "l2": l2,
        "documents": len(data.documents),
        "dev_documents": len(data.dev),
        "claims": len(data.claims),
        "documents_sha256": hashlib.sha256("\0".join(data.documents).encode("utf-8")).hexdigest(),
        "dev_claim_auc": roc_auc(y_dev, p_dev),
        "dev_claim_balanced_accuracy": balanced_accuracy(y_dev, p_dev >= 0.5),
        "summaries": len(matrices),
        "dev_summary_auc_zs": roc_auc(lab[is_dev], zs_dev),
        "dev_summary_auc_conv": roc_auc(lab[is_dev], conv_dev),
    }
    progress(
        f"Conv head: synthetic dev summary AUC {provenance['dev_summary_auc_conv']:.3f} "
        f"(ZS {provenance['dev_summary_auc_zs']:.3f})"
    )
    return FactccWeights(model.logistic, conv, provenance)


def _fit_pair_classifier(
    data: TrainingSet, encode: Encode, l2: float
) -> tuple[FactccModel, np.ndarray, np.ndarray]:
    """The FactCC model with its pair classifier fitted on the training documents' claims
    (premise: the whole document); the held-out claims' labels and P(consistent)."""
    model = FactccModel(
        LogisticModel(
            FEATURES, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), (0.0,) * len(FEATURES), 0.0
        ),
        encode,
        "untrained",
    )
    encode([c.text for c in data.claims])  # one batch
    x = model.features([data.documents[o] for o in data.owner], [c.text for c in data.claims])
    y = np.array([c.label for c in data.claims])
    dev = np.isin(np.array(data.owner), sorted(data.dev))
    logistic = fit_logistic(x[~dev], y[~dev], FEATURES, l2=l2)
    p_dev = logistic.predict_proba(x[dev])
    model.logistic = logistic
    return model, y[dev], p_dev


def _summary_matrices(
    data: TrainingSet, model: FactccModel, seed: int
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The sentence matrices of synthetic multi-sentence summaries of each document (for the
    Conv head), their labels, and whether each one's document is held out."""
    rng = np.random.default_rng(seed + 1)
    matrices, labels, held_out = [], [], []
    for i, document in enumerate(data.documents):
        mine = [c for c, o in zip(data.claims, data.owner, strict=True) if o == i]
        for sentences, label in synthetic_summaries(mine, rng):
            matrices.append(model.sentence_matrix(document, sentences))
            labels.append(label)
            held_out.append(i in data.dev)
    return matrices, np.array(labels), np.array(held_out)


def train_from_corpus(
    weights_dir: str | Path,
    corpus: str | Path,
    encode: Encode,
    say: Callable[[str], None] = lambda line: None,
) -> Path:
    """Train the FactCC-style checker on a corpus's own sentences (weak supervision) and write
    its weights to weights_dir/model.json; returns that path."""
    from hss_gate.common.inputs import load_corpus
    from hss_gate.consistency.model import save_factcc_weights
    from hss_gate.models.language import SpacyTagger

    say(f"training the FactCC-style classifier on {corpus} ...")
    tagged = tag_documents(SpacyTagger().nlp, [d.text for d in load_corpus(corpus)])
    trained = train_factcc(tagged, encode, progress=lambda m: say(f"  {m}"))
    path = save_factcc_weights(weights_dir, trained)
    say(f"wrote {path}")
    return path
