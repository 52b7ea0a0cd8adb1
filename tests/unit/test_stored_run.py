"""A stored run's summaries back into the cache: only for the same summarizer, only for the
exact texts it summarized."""

from __future__ import annotations

import pytest

from hss_gate.common.cache import Cache
from hss_gate.common.io import write_json_atomic, write_jsonl_atomic
from hss_gate.scoring.generation import summary_key
from hss_gate.scoring.stored_run import load_stored_run, seed_summaries
from hss_gate.text.corpus import Document
from hss_gate.text.perturb import apply_edits

pytestmark = pytest.mark.unit

DOC = Document(doc_id="d1", category="news", text="The cat sat on the big mat today.")
EDIT = {
    "position": 6,
    "char_start": 19,
    "original": "big",
    "replacement": "large",
    "word_cosine": 0.9,
    "sentence_similarity": 0.95,
}


@pytest.fixture()
def run_dir(tmp_path):
    write_json_atomic(tmp_path / "summary.json", {"fingerprint": "fp-1"})
    write_jsonl_atomic(
        tmp_path / "summaries.jsonl",
        [
            {"doc_id": "d1", "strength": "base", "index": 0, "summary": "A cat sat."},
            {"doc_id": "d1", "strength": "low", "index": 0, "summary": "A cat sat down."},
        ],
    )
    write_jsonl_atomic(
        tmp_path / "edits.jsonl", [{"doc_id": "d1", "strength": "low", "index": 0, **EDIT}]
    )
    return tmp_path


def test_the_same_summarizer_gets_every_summary_under_the_exact_text_key(run_dir, tmp_path):
    cache = Cache(tmp_path / "cache")
    assert seed_summaries(load_stored_run(run_dir), [DOC], "fp-1", cache) == 2
    perturbed = DOC.text.replace("big", "large")
    found = cache.get_many(
        "summaries", [summary_key("fp-1", DOC.text), summary_key("fp-1", perturbed)]
    )
    assert sorted(v.decode() for v in found.values()) == ["A cat sat down.", "A cat sat."]


def test_another_summarizer_or_another_document_gets_nothing(run_dir, tmp_path):
    cache = Cache(tmp_path / "cache")
    stored = load_stored_run(run_dir)
    assert seed_summaries(stored, [DOC], "fp-2", cache) == 0
    changed = DOC.model_copy(update={"text": "The cat sat on the small mat."})
    assert seed_summaries(stored, [changed], "fp-1", cache) == 1  # its base text only
    assert cache.get_many("summaries", [summary_key("fp-1", DOC.text)]) == {}


def test_edits_rebuild_the_perturbed_text(run_dir):
    stored = load_stored_run(run_dir)
    texts = stored.texts(DOC)
    assert texts[("d1", "low", 0)] == apply_edits(DOC.text, stored.edits[("d1", "low", 0)])
    assert "large mat" in texts[("d1", "low", 0)]


def test_perturbations_are_restored_only_for_the_same_settings_and_models(run_dir, tmp_path):
    import json

    from hss_gate.scoring.pipeline import perturbation_key
    from hss_gate.scoring.stored_run import seed_perturbations
    from hss_gate.settings import HssSettings, PerturbSettings

    settings = HssSettings(perturb=PerturbSettings(strengths={"low": (0.02, 0.5)}, k=1))
    write_json_atomic(
        run_dir / "summary.json",
        {
            "fingerprint": "fp-1",
            "perturb_fingerprint": "tools-1",
            "settings": settings.model_dump(mode="json"),
        },
    )
    (run_dir / "perturbations.csv").write_text(
        "doc_id,strength,index,n_words,reached,note\nd1,low,0,8,True,\n", encoding="utf-8"
    )
    stored = load_stored_run(run_dir)
    cache = Cache(tmp_path / "cache")
    assert seed_perturbations(stored, [DOC], settings, "tools-2", cache) == 0  # other models
    other = settings.model_copy(update={"perturb": PerturbSettings(tau=0.8)})
    assert seed_perturbations(stored, [DOC], other, "tools-1", cache) == 0  # other settings
    assert seed_perturbations(stored, [DOC], settings, "tools-1", cache) == 1
    key = perturbation_key(DOC, settings, "tools-1")
    made = json.loads(cache.get_many("perturbations", [key])[key])
    assert made[0]["text"] == "The cat sat on the large mat today."
    assert made[0]["edits"][0]["replacement"] == "large" and made[0]["n_words"] == 8
