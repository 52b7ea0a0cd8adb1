import json

import pytest

from hss_gate.common.cache import Cache, content_key
from hss_gate.common.inputs import load_normalization
from hss_gate.common.io import write_json_atomic
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.models.summarizers.base import FakeSummarizer
from hss_gate.scoring.normalization import compute_normalization
from hss_gate.scoring.pipeline import score_documents, summarize_cached
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import HssSettings, PerturbSettings
from hss_gate.text.corpus import Document
from tests.conftest import FakeChecker, FakeTagger
from tests.unit.test_perturb import LEXICON, TEXT, VECTORS

pytestmark = pytest.mark.unit


def _toolkit():
    return Toolkit(
        tagger=FakeTagger(),
        vectors=VECTORS,
        lexicon=LEXICON,
        embedder=HashingEmbedder(),
        checker=FakeChecker(),
    )


def _settings():
    return HssSettings(
        perturb=PerturbSettings(
            tau=0.7, gamma=0.0, k=2, strengths={"low": (0.05, 0.1), "high": (0.1, 0.3)}
        )
    )


DOCS = [
    Document(doc_id="a", category="news", text=TEXT),
    Document(doc_id="b", category="legal", text=TEXT.replace("council", "court")),
]


def test_cache_roundtrip_and_persistence(tmp_path):
    cache = Cache(tmp_path)
    cache.put_many("ns", {"k": b"v"})
    cache.close()
    again = Cache(tmp_path)
    assert again.get_many("ns", ["k", "missing"]) == {"k": b"v"}
    assert content_key("a", "bc") != content_key("ab", "c")


def test_summaries_are_generated_once(tmp_path):
    cache, fake = Cache(tmp_path), FakeSummarizer()
    first = summarize_cached(["one. two. three.", "x. y."], fake, cache)
    assert fake.calls == 2
    second = summarize_cached(["one. two. three.", "x. y.", "x. y."], fake, cache)
    assert fake.calls == 2 and second[:2] == first


def test_copying_summarizer_scores_zero_with_perturbation_aware_distance(tmp_path):
    settings = _settings()
    result = score_documents(
        DOCS, FakeSummarizer(n_sentences=3), settings, _toolkit(), Cache(tmp_path), None
    )
    aware = [r["distance_aware"] for r in result.perturbations]
    raw = [r["distance_raw"] for r in result.perturbations]
    assert len(aware) == 2 * 2 * 2
    assert max(aware) == pytest.approx(0.0, abs=1e-6)
    assert max(raw) > 0.0  # the raw variant measures the swaps the copy carried over


def test_full_result_with_normalization(tmp_path):
    settings = _settings()
    tools, cache = _toolkit(), Cache(tmp_path)
    reference = score_documents(
        DOCS, FakeSummarizer(inject="Paris 1999."), settings, tools, cache, None
    )
    norm = compute_normalization(
        ((r["category"], r["distance_aware"], r["distance_raw"]) for r in reference.perturbations),
        quantile=0.95,
        model="fake",
        settings_digest="x",
        created="now",
    )
    write_json_atomic(tmp_path / "norm.json", norm.model_dump(mode="json"))
    norm = load_normalization(tmp_path / "norm.json")
    docs = [*DOCS, Document(doc_id="c", category="unseen", text=TEXT)]
    result = score_documents(
        docs, FakeSummarizer(inject="Paris 1999."), settings, tools, cache, norm
    )
    assert all(0.0 <= r["hss"] <= 1.0 for r in result.documents)
    assert [r["constant_source"] for r in result.documents] == ["category", "category", "global"]
    assert any("unseen" in w for w in result.warnings)
    agg = result.aggregates
    assert agg["hss"]["ci_low"] <= agg["hss"]["mean"] <= agg["hss"]["ci_high"]
    assert set(agg["by_category"]) == {"news", "legal", "unseen"}
    assert json.dumps(agg)  # serializable


def test_rerun_is_identical_and_generates_nothing(tmp_path):
    settings, tools = _settings(), _toolkit()
    fake = FakeSummarizer()
    first = score_documents(DOCS, fake, settings, tools, Cache(tmp_path), None)
    calls = fake.calls
    second = score_documents(DOCS, fake, settings, tools, Cache(tmp_path), None)
    assert fake.calls == calls
    assert first.perturbations == second.perturbations and first.edits == second.edits


def test_a_document_cut_for_the_summarizer_is_perturbed_only_where_it_is_read(tmp_path):
    from hss_gate.scoring.pipeline import make_perturbations
    from hss_gate.settings import GenerateSettings

    head = " ".join([TEXT] * 4)  # the words the summarizer reads
    limit = len(head.split())
    assert limit >= 50
    long_doc = Document(doc_id="long", category="news", text=f"{head} {TEXT}")
    settings = _settings()
    settings.generate = GenerateSettings(max_input_words=limit)
    made = make_perturbations([long_doc], settings, _toolkit(), Cache(tmp_path / "c"))["long"]
    cut = len(head)
    visible_words = sum(1 for t in FakeTagger().tokens(head) if t.pos != "PUNCT")
    assert any(p.edits for p in made)
    for p in made:
        assert all(e.char_start + len(e.original) <= cut for e in p.edits)  # no swap past the cut
        assert p.text.endswith(long_doc.text[cut:])  # the unread tail is untouched
        assert p.n_words == visible_words  # band shares count the words read
    # the same document under a longer limit is perturbed over all of it (another cache key)
    settings.generate = GenerateSettings(max_input_words=limit * 2)
    whole = make_perturbations([long_doc], settings, _toolkit(), Cache(tmp_path / "c"))["long"]
    assert all(p.n_words > visible_words for p in whole)


def test_the_summaries_are_embedded_before_the_checker_runs(tmp_path):
    """The checker may embed through the same cache: the engine embeds the summaries' sentences
    first, in its own batch, so a cold run's vectors (and HSS) do not depend on the checker's
    batches."""
    from hss_gate.text.sentences import split_sentences

    events: list[tuple[str, list[str]]] = []

    class Embedder(HashingEmbedder):
        def encode(self, texts):
            events.append(("embed", list(texts)))
            return super().encode(texts)

    class Checker(FakeChecker):
        def check(self, pairs):
            events.append(("check", []))
            return super().check(pairs)

    tools = _toolkit()
    tools.embedder, tools.checker = Embedder(), Checker()
    result = score_documents(
        DOCS, FakeSummarizer(inject="Paris 1999."), _settings(), tools, Cache(tmp_path), None
    )
    first_check = next(i for i, (kind, _) in enumerate(events) if kind == "check")
    embedded_before = {t for _, texts in events[:first_check] for t in texts}
    sentences = {s for row in result.summaries for s in split_sentences(row["summary"])}
    assert sentences and sentences <= embedded_before
