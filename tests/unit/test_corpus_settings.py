import json

import pytest

from hss_gate.common.errors import InputError
from hss_gate.common.inputs import load_corpus
from hss_gate.settings import load_settings

pytestmark = pytest.mark.unit


def _write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


DOC = {"doc_id": "a", "category": "news", "tier": "simple", "title": "t", "text": "Some text."}


def test_loads_file_and_directory(tmp_path):
    _write(tmp_path / "one.jsonl", [DOC, DOC | {"doc_id": "b"}])
    _write(tmp_path / "two.jsonl", [DOC | {"doc_id": "c"}])
    assert [d.doc_id for d in load_corpus(tmp_path / "one.jsonl")] == ["a", "b"]
    assert [d.doc_id for d in load_corpus(tmp_path)] == ["a", "b", "c"]
    assert [d.doc_id for d in load_corpus(tmp_path, limit=2)] == ["a", "b"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([DOC, "{not json"], ":2: invalid JSON"),
        ([DOC | {"text": "   "}], ":1: field 'text'"),
        ([DOC, DOC], ":2: duplicate doc_id 'a'"),
        (["[1, 2]"], ":1: expected a JSON object"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, rows, message):
    path = _write(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        load_corpus(path)


def test_published_sets_load_with_document_and_no_category(tmp_path):
    """frank_cnndm-style files: doc_id and document, no category."""
    path = _write(tmp_path / "d.jsonl", [{"doc_id": "x1", "document": "An article."}])
    (doc,) = load_corpus(path)
    assert (doc.doc_id, doc.text, doc.category) == ("x1", "An article.", "uncategorized")
    both = _write(tmp_path / "both.jsonl", [{"doc_id": "x", "document": "A.", "text": "B."}])
    with pytest.raises(InputError, match=r"both.jsonl:1: both 'text' and 'document'"):
        load_corpus(both)


def test_empty_corpus_and_missing_path(tmp_path):
    with pytest.raises(InputError, match="no documents"):
        load_corpus(_write(tmp_path / "e.jsonl", [""]))
    with pytest.raises(InputError, match="no such file"):
        load_corpus(tmp_path / "missing.jsonl")


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"doc_id": "\xff"}\n')
    with pytest.raises(InputError, match="not valid UTF-8"):
        load_corpus(path)


def test_settings_file_env_and_override_order(tmp_path, monkeypatch):
    params = tmp_path / "params.yaml"
    params.write_text("perturb:\n  tau: 0.5\n  k: 2\n")
    assert load_settings(params).perturb.tau == 0.5
    monkeypatch.setenv("HSS_PERTURB__TAU", "0.65")
    settings = load_settings(params, perturb__k=4)
    assert settings.perturb.tau == 0.65 and settings.perturb.k == 4


def test_invalid_setting_names_the_key(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("perturb:\n  gamma: 1.5\n")
    with pytest.raises(InputError, match=r"perturb\.gamma"):
        load_settings(params)
    params.write_text("perturb:\n  strengths:\n    low: [0.3, 0.1]\n")
    with pytest.raises(InputError, match=r"strengths\.low"):
        load_settings(params)


def test_repository_params_yaml_is_valid():
    from tests.conftest import REPO

    settings = load_settings(REPO / "params.yaml")
    assert set(settings.perturb.strengths) == {"low", "moderate", "high"}
    lows = [band[0] for band in settings.perturb.strengths.values()]
    highs = [band[1] for band in settings.perturb.strengths.values()]
    assert min(lows) >= 0.02 and max(highs) <= 0.30
