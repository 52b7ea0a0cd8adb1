"""Factuality comparators for a (document, summary) pair: pure functions over text and arrays.

- Token overlap: precision / recall / F1 of the summary's content words against the document's.
- SummaC-ZS aggregation of a sentence-level consistency matrix (summary sentences x document
  sentences): max over document sentences, mean over summary sentences.
- SummaC-Conv: a histogram of each summary sentence's row, a learned linear filter over the
  histogram (SummaC's 1-D convolution has a kernel as wide as the histogram, so it is exactly
  this), and the mean over summary sentences.
- FactCC-style pair features and a small logistic regression, trained on weakly supervised
  synthetic claims (``synthetic_claims``): document sentences under meaning-preserving transforms
  (positive) and under entity, number, pronoun and negation swaps (negative).
- Evaluation helpers: ROC AUC, balanced accuracy, a threshold rule and cross-fitted accuracy.

Nothing here loads a model or reads a file; the models live in :mod:`hss_gate.nli`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from hss_gate.sentences import split_sentences
from hss_gate.signals import normalize_token

# ---------------------------------------------------------------------------------------------
# tokens

_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve y n't nt don didn doesn isn wasn weren won wouldn couldn shouldn hasn haven
    hadn aren ain said says say one us may might must shall would also mr mrs ms dr lrb rrb lsb
    rsb cnn
    """.split()  # noqa: SIM905
)
NEGATIONS = frozenset({"not", "no", "never", "nobody", "nothing", "none", "neither", "nor", "t"})
_MALE = frozenset({"he", "him", "his", "himself"})
_FEMALE = frozenset({"she", "her", "hers", "herself"})


def tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens ("n't" and "cannot" become "not")."""
    text = re.sub(
        r"\b(ca|wo)n't\b",
        lambda m: "can not" if m.group(1).lower() == "ca" else "will not",
        text,
        flags=re.IGNORECASE,
    )
    text = re.sub(r"n't\b", " not", text, flags=re.IGNORECASE)
    text = re.sub(r"\bcannot\b", "can not", text, flags=re.IGNORECASE)
    return [normalize_token(t) for t in _TOKEN.findall(text)]


def content_tokens(text: str) -> list[str]:
    """Tokens that carry content: no stop words."""
    return [t for t in tokens(text) if t not in STOP_WORDS]


def is_number(token: str) -> bool:
    return token[:1].isdigit()


def name_tokens(text: str) -> set[str]:
    """Lower-cased words the text writes capitalized inside a sentence (names, mostly)."""
    names: set[str] = set()
    for sentence in split_sentences(text):
        words = re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)
        for word in words[1:]:
            if word[0].isupper() and word.lower() not in STOP_WORDS:
                names.update(t for t in tokens(word) if t not in STOP_WORDS)
    return names


def split_units(text: str) -> list[str]:
    """Sentences of a text, also for lower-cased, tokenized text ("... draw . andros ...")."""
    cased = re.sub(r"(\s[.!?]\s+|[a-z0-9)\"'][.!?]\s+)([a-z])", _upper_second, text)
    units = split_sentences(cased) or ([" ".join(text.split())] if text.strip() else [])
    return [u.lower() for u in units] if text == text.lower() else units


def _upper_second(match: re.Match[str]) -> str:
    return match.group(1) + match.group(2).upper()


# ---------------------------------------------------------------------------------------------
# token overlap


@dataclass(frozen=True)
class Overlap:
    """Content-word overlap of a summary with its document (clipped counts, like ROUGE-1)."""

    precision: float
    recall: float
    f1: float


def overlap_scores(document: str, summary: str) -> Overlap:
    """Precision = share of the summary's content words found in the document; recall = share of
    the document's content words the summary uses; F1 their harmonic mean (0 when empty)."""
    doc, summ = Counter(content_tokens(document)), Counter(content_tokens(summary))
    common = sum((doc & summ).values())
    precision = common / sum(summ.values()) if summ else 0.0
    recall = common / sum(doc.values()) if doc else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return Overlap(precision, recall, f1)


# ---------------------------------------------------------------------------------------------
# SummaC aggregation


def summac_zs(matrix: np.ndarray, reduce: str = "mean") -> float:
    """SummaC-ZS: ``matrix[i, j]`` = consistency of summary sentence i with document sentence j;
    the best document sentence supports each summary sentence, then ``reduce`` (mean | min) over
    summary sentences. An empty matrix gives NaN."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {m.shape}")
    if m.size == 0:
        return math.nan
    best = m.max(axis=1)
    if reduce == "mean":
        return float(best.mean())
    if reduce == "min":
        return float(best.min())
    raise ValueError(f"reduce must be 'mean' or 'min', not {reduce!r}")


def row_histograms(
    matrix: np.ndarray, bins: int, low: float = 0.0, high: float = 1.0
) -> np.ndarray:
    """SummaC-Conv's input: per summary sentence (row), the histogram of its scores against all
    document sentences over ``bins`` equal bins on [low, high] (values clipped), as shares."""
    m = np.clip(np.asarray(matrix, dtype=float), low, high)
    if m.ndim != 2 or len(m) == 0:
        return np.zeros((0, bins))
    edges = np.linspace(low, high, bins + 1)
    hist = np.stack([np.histogram(row, bins=edges)[0] for row in m]).astype(float)
    return hist / max(m.shape[1], 1)


@dataclass(frozen=True)
class ConvAggregator:
    """SummaC-Conv head. As in SummaC's code, a linear layer maps each summary sentence's
    histogram to a logit (the "convolution": its kernel spans the whole histogram), the logits
    are averaged over the summary's sentences and a sigmoid gives P(consistent). Differences from
    SummaC: histograms are shares (not counts), equal-width bins, no 10-sentence cap."""

    weights: tuple[float, ...]
    bias: float
    low: float = 0.0
    high: float = 1.0

    @property
    def bins(self) -> int:
        return len(self.weights)

    def sentence_logits(self, matrix: np.ndarray) -> np.ndarray:
        """w . histogram(row) + b for each summary sentence (row)."""
        h = row_histograms(matrix, self.bins, self.low, self.high)
        return h @ np.asarray(self.weights) + self.bias

    def score(self, matrix: np.ndarray) -> float:
        """sigmoid(mean of the sentence logits); NaN for an empty matrix."""
        z = self.sentence_logits(matrix)
        return float(_sigmoid(z.mean())) if len(z) else math.nan


def fit_conv(
    matrices: Sequence[np.ndarray],
    labels: Sequence[int],
    bins: int = 20,
    l2: float = 1e-4,
    low: float = 0.0,
    high: float = 1.0,
) -> ConvAggregator:
    """Fit the Conv head on summary-level labels (1 = consistent) by L2-regularized cross-entropy.
    The mean of linear logits is linear in the mean histogram, so this is a logistic regression
    on each summary's mean row histogram. Fit it on data you do not evaluate on."""
    from scipy.optimize import minimize

    x = np.stack([row_histograms(m, bins, low, high).mean(axis=0) for m in matrices])
    y = np.asarray(labels, dtype=float)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        p = np.clip(_sigmoid(x @ w + b), 1e-9, 1 - 1e-9)
        nll = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + l2 * float(w @ w)
        r = (p - y) / len(y)
        return nll, np.append(x.T @ r + 2 * l2 * w, r.sum())

    result = minimize(loss, np.zeros(bins + 1), jac=True, method="L-BFGS-B")
    return ConvAggregator(tuple(float(v) for v in result.x[:-1]), float(result.x[-1]), low, high)


# ---------------------------------------------------------------------------------------------
# FactCC-style features of (premise, claim)


@dataclass
class Premise:
    """A premise (a document or one sentence) prepared once for many claims. ``names`` are the
    lower-cased name tokens (default: those the premise writes capitalized inside a sentence);
    pass the whole document's when the premise is one of its sentences."""

    sentences: list[str]
    vectors: np.ndarray  # (n_sentences, dim), L2-normalized
    names: set[str] | None = None
    token_sets: list[set[str]] = field(init=False)
    bigram_sets: list[set[tuple[str, str]]] = field(init=False)
    negations: list[int] = field(init=False)
    genders: list[set[str]] = field(init=False)
    all_tokens: set[str] = field(init=False)

    def __post_init__(self) -> None:
        toks = [tokens(s) for s in self.sentences]
        self.token_sets = [set(t) for t in toks]
        self.bigram_sets = [set(pairwise(t)) for t in toks]
        self.negations = [sum(w in NEGATIONS for w in t) for t in toks]
        self.genders = [_genders(t) for t in toks]
        self.all_tokens = set().union(*self.token_sets) if toks else set()
        if self.names is None:
            self.names = name_tokens(" ".join(self.sentences))


FEATURES = (
    "cos_max",
    "cos_second",
    "precision_local",
    "precision_global",
    "bigram_local",
    "salient_local",
    "salient_missing",
    "number_missing",
    "negation_mismatch",
    "pronoun_mismatch",
)


def _genders(toks: Sequence[str]) -> set[str]:
    out = set()
    if any(t in _MALE for t in toks):
        out.add("m")
    if any(t in _FEMALE for t in toks):
        out.add("f")
    return out


def claim_features(claim: str, vector: np.ndarray, premise: Premise, top: int = 2) -> np.ndarray:
    """FEATURES of one claim sentence against a premise: similarity to the best-aligned premise
    sentences (SBERT cosine), lexical support there and in the whole premise, support of the
    claim's numbers and names, and negation / pronoun disagreement with the best sentence."""
    if not premise.sentences:
        return np.array([0, 0, 0, 0, 0, 0, 1, 1, 0, 0], dtype=float)
    cos = premise.vectors @ np.asarray(vector, dtype=float)
    order = np.argsort(-cos, kind="stable")[:top]
    window: set[str] = set().union(*(premise.token_sets[i] for i in order))
    window_bigrams: set[tuple[str, str]] = set().union(*(premise.bigram_sets[i] for i in order))
    toks = tokens(claim)
    content = [t for t in toks if t not in STOP_WORDS]
    bigrams = list(pairwise(toks))
    names = (premise.names or set()) | _claim_names(claim)
    salient = [t for t in content if is_number(t) or t in names]

    def share(items: Sequence[object], pool: set, empty: float = 1.0) -> float:
        return sum(i in pool for i in items) / len(items) if items else empty

    numbers = [t for t in content if is_number(t)]
    claim_neg = sum(t in NEGATIONS for t in toks) % 2
    best = int(order[0])
    best_genders = premise.genders[best]
    claim_genders = _genders(toks)
    return np.array(
        [
            float(cos[order[0]]),
            float(cos[order[1]]) if len(order) > 1 else float(cos[order[0]]),
            share(content, window),
            share(content, premise.all_tokens),
            share(bigrams, window_bigrams),
            share(salient, window),
            1.0 - share(salient, premise.all_tokens),
            float(any(t not in premise.all_tokens for t in numbers)),
            float(claim_neg != premise.negations[best] % 2),
            float(bool(claim_genders and best_genders) and not claim_genders & best_genders),
        ]
    )


def _claim_names(claim: str) -> set[str]:
    return name_tokens(claim) if claim != claim.lower() else set()


# ---------------------------------------------------------------------------------------------
# logistic regression (numpy + scipy; a dozen weights)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


@dataclass(frozen=True)
class LogisticModel:
    """Standardized logistic regression: P(consistent | features)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return _sigmoid(z @ np.asarray(self.coef) + self.intercept)

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> LogisticModel:
        return cls(
            tuple(data["features"]),  # type: ignore[arg-type]
            tuple(float(v) for v in data["mean"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["scale"]),  # type: ignore[union-attr]
            tuple(float(v) for v in data["coef"]),  # type: ignore[union-attr]
            float(data["intercept"]),  # type: ignore[arg-type]
        )


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
        p = np.clip(_sigmoid(z @ w + b), 1e-9, 1 - 1e-9)
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


# ---------------------------------------------------------------------------------------------
# FactCC's weakly supervised claims

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


# ---------------------------------------------------------------------------------------------
# evaluation


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties); labels 1/0."""
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(labels: Sequence[int], predicted: Sequence[int]) -> float:
    """Mean of the true-positive and true-negative rates."""
    y = np.asarray(labels, dtype=int)
    p = np.asarray(predicted, dtype=int)
    rates = [float((p[y == c] == c).mean()) for c in (0, 1) if (y == c).any()]
    return float(np.mean(rates)) if rates else math.nan


def best_threshold(labels: Sequence[int], scores: Sequence[float]) -> float:
    """The threshold (predict consistent when score >= t) with the best balanced accuracy on
    these labels; ties go to the middle candidate. Fit it on data you do not evaluate on."""
    s = np.asarray(scores, dtype=float)
    values = np.unique(s)
    candidates = np.concatenate(
        [[values[0] - 1e-9], (values[1:] + values[:-1]) / 2, [values[-1] + 1e-9]]
    )
    accs = np.array([balanced_accuracy(labels, (s >= c).astype(int)) for c in candidates])
    best = np.flatnonzero(accs == accs.max())
    return float(candidates[best[len(best) // 2]])


def cross_fit_balanced_accuracy(
    labels: Sequence[int],
    scores: Sequence[float],
    folds: int = 5,
    repeats: int = 10,
    seed: int = 0,
) -> float:
    """Balanced accuracy where each item's threshold was chosen on the other folds only
    (stratified folds, averaged over ``repeats`` random splits)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(repeats):
        fold = np.empty(len(y), dtype=int)
        for c in (0, 1):
            idx = rng.permutation(np.flatnonzero(y == c))
            fold[idx] = np.arange(len(idx)) % folds
        predicted = np.empty(len(y), dtype=int)
        for f in range(folds):
            test = fold == f
            if not test.any():
                continue
            t = best_threshold(y[~test], s[~test])
            predicted[test] = (s[test] >= t).astype(int)
        results.append(balanced_accuracy(y, predicted))
    return float(np.mean(results))


def truecase(summary: str, document: str) -> str:
    """Capitalize the summary's lower-case words that the document mostly writes capitalized
    (lower-cased benchmark summaries hide names from a case-sensitive NER)."""
    forms: Counter[str] = Counter()
    for sentence in split_sentences(document):  # sentence-initial capitals say nothing
        forms.update(re.findall(r"[A-Za-z]+", sentence)[1:])

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if word != word.lower():
            return word
        cap = word.capitalize()
        return cap if forms[cap] > forms[word] else word

    return re.sub(r"[A-Za-z]+", fix, summary)


# ---------------------------------------------------------------------------------------------
# human-labelled benchmark records (parsed objects in, pairs out; the caller reads the files)


@dataclass(frozen=True)
class LabelledPair:
    """A (document, summary) pair with a human label: 1 = consistent, 0 = inconsistent."""

    id: str
    document: str
    summary: str
    label: int


def _record(value: object) -> dict:
    """A record that may be a dict or its Python-repr / JSON string."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        import ast
        import json

        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = ast.literal_eval(value)
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"not a record: {str(value)[:60]!r}")


def summac_pairs(data: dict[str, object]) -> list[LabelledPair]:
    """The SummaC benchmark's per-dataset dict (key -> record with document, claim, label)."""
    out = []
    for key, value in data.items():
        rec = _record(value)
        if "claim" not in rec or "label" not in rec:
            raise ValueError(f"{key}: a record without 'claim' and 'label' (unlabelled subset?)")
        out.append(
            LabelledPair(str(key), str(rec["document"]), str(rec["claim"]), int(rec["label"]))
        )
    return out


def qags_label(sentences: Sequence[dict]) -> int:
    """A QAGS summary is inconsistent (0) if any sentence has a majority of "no" answers."""
    for sentence in sentences:
        answers = [str(r["response"]).strip().lower() for r in sentence["responses"]]
        if sum(a == "no" for a in answers) * 2 > len(answers):
            return 0
    return 1


def qags_pairs(lines: Sequence[str]) -> list[LabelledPair]:
    """QAGS (CNN/DM or XSum) JSON lines: article, summary_sentences with workers' yes/no."""
    import json

    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        rec = json.loads(line)
        sentences = rec["summary_sentences"]
        summary = " ".join(str(s["sentence"]).strip() for s in sentences)
        out.append(
            LabelledPair(f"qags_{number}", str(rec["article"]), summary, qags_label(sentences))
        )
    return out
