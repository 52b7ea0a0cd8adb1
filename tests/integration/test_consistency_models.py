"""Consistency models and `hss factuality` end to end.

The NLI cross-encoder is a tiny randomly initialised BERT with a word-level vocabulary, built and
saved in the test (nothing is downloaded). The CLI runs once on fakes (hashing embedder, fake
spaCy) and once on the embedded SBERT and spaCy models (skipped when they are not installed).
The human-labelled external data is read when present and skipped cleanly when absent.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hss_gate.cli import app
from hss_gate.common.errors import ModelError
from hss_gate.consistency import aggregation, calibration, features
from hss_gate.consistency import model as consistency_model
from hss_gate.consistency import scorer as pair_scorer
from hss_gate.models.embedding import HashingEmbedder
from hss_gate.research import factuality_data
from tests.conftest import CORPUS, REPO

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.integration

EXTERNAL = Path(os.environ.get("HSS_EXTERNAL_DATA", REPO.parent / "shared" / "data" / "external"))
_TEXT = """the council approved a new budget on monday mayor said city could not afford roads
rain fell river rose bakery sells bread team won final match 40 90 million pounds"""
WORDS = _TEXT.split()
LABELS = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
PREMISES = [
    "the council approved a new budget on monday",
    "rain fell and the river rose",
    "the bakery sells bread",
    "the team won the final match",
]
HYPOTHESES = [
    "the council approved a budget",
    "the river rose",
    "the mayor sells roads",
    "the team could not afford a match",
]


def _save_nli(directory: Path, labels: tuple[str, ...], seed: int = 0) -> Path:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokenizer = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
        initializer_range=0.5,  # large random weights: scores that depend on the input
    )
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(config).eval()
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    assert list(directory.glob("*.safetensors"))
    return directory


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save_nli(tmp_path_factory.mktemp("nli") / "model", LABELS)


def _reference_probs(directory: Path, premises: list[str], hypotheses: list[str]) -> np.ndarray:
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        directory, local_files_only=True
    ).eval()
    rows = []
    for p, h in zip(premises, hypotheses, strict=True):  # one pair at a time: no padding
        with torch.no_grad():
            logits = model(**tokenizer(p, h, return_tensors="pt")).logits
        rows.append(torch.softmax(logits, -1)[0].numpy())
    return np.array(rows)


def test_hf_nli_scores_shape_range_and_label_mapping(nli_dir: Path) -> None:
    model = consistency_model.load_consistency_model(f"hf:{nli_dir}", HashingEmbedder().encode)
    assert isinstance(model, consistency_model.HfNliModel)
    scores = model.scores(PREMISES, HYPOTHESES)
    assert scores.shape == (4,)
    assert np.all((scores >= 0) & (scores <= 1))
    assert (model.entail_index, model.contradiction_index) == (2, 0)
    probs = _reference_probs(nli_dir, PREMISES, HYPOTHESES)
    np.testing.assert_allclose(scores, (1 + probs[:, 2] - probs[:, 0]) / 2, atol=1e-5)
    assert len(set(np.round(scores, 6))) > 1, "a random model should still depend on the input"
    # padding in a batch does not change a pair's score
    single = consistency_model.HfNliModel(str(nli_dir), batch_size=1).scores(PREMISES, HYPOTHESES)
    np.testing.assert_allclose(single, scores, atol=1e-5)
    assert model.scores([], []).shape == (0,)
    with pytest.raises(ValueError, match="premises"):
        model.scores(PREMISES, HYPOTHESES[:2])


def test_hf_nli_follows_the_config_labels_not_the_position(nli_dir: Path, tmp_path: Path) -> None:
    swapped = tmp_path / "swapped"
    shutil.copytree(nli_dir, swapped)
    config = json.loads((swapped / "config.json").read_text())
    config["id2label"] = {"0": "ENTAILMENT", "1": "NEUTRAL", "2": "CONTRADICTION"}
    config["label2id"] = {"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2}
    (swapped / "config.json").write_text(json.dumps(config))

    model = consistency_model.HfNliModel(str(swapped))
    scores = model.scores(PREMISES, HYPOTHESES)
    probs = _reference_probs(nli_dir, PREMISES, HYPOTHESES)  # same weights
    assert (model.entail_index, model.contradiction_index) == (0, 2)
    np.testing.assert_allclose(scores, (1 + probs[:, 0] - probs[:, 2]) / 2, atol=1e-5)
    assert model.fingerprint != consistency_model.HfNliModel(str(nli_dir)).fingerprint


def test_hf_nli_matrix_and_summac_zs(nli_dir: Path) -> None:
    model = consistency_model.HfNliModel(str(nli_dir))
    document = "The council approved a new budget on Monday. Rain fell. The river rose."
    summary = ["The council approved a budget.", "The river rose."]
    matrix = consistency_model.consistency_matrix(model, document, summary)
    assert matrix.shape == (2, 3)
    expected = model.scores(
        [s for _ in summary for s in features.split_sentences(document)],
        [h for h in summary for _ in range(3)],
    ).reshape(2, 3)
    np.testing.assert_allclose(matrix, expected)
    assert aggregation.summac_zs(matrix) == pytest.approx(matrix.max(axis=1).mean())


def test_hf_nli_refuses_pickles_and_unknown_labels(nli_dir: Path, tmp_path: Path) -> None:
    pickled = tmp_path / "pickled"
    shutil.copytree(nli_dir, pickled)
    weights = next(pickled.glob("*.safetensors"))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(nli_dir)
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    weights.unlink()
    with pytest.raises(ModelError, match="safetensors"):
        consistency_model.HfNliModel(str(pickled))

    unlabelled = _save_nli(tmp_path / "unlabelled", ("LABEL_0", "LABEL_1"))
    with pytest.raises(ModelError, match="no entailment label"):
        consistency_model.HfNliModel(str(unlabelled)).scores(PREMISES[:1], HYPOTHESES[:1])
    with pytest.raises(ModelError, match="cannot load NLI model"):
        consistency_model.HfNliModel(str(tmp_path / "absent-dir-or-hub-id")).scores(["a"], ["b"])


# --------------------------------------------------------------------------- the CLI


def _write_pairs(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def _small_corpus(path: Path, n: int) -> Path:
    lines = (CORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:: max(1, len(lines) // n)][:n]) + "\n", encoding="utf-8")
    return path


def _pairs_from_corpus() -> tuple[str, dict[str, str]]:
    doc = json.loads((CORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[0])
    text = doc["text"]  # Hartley's Bakery, Leeds: five new shops, 14 shops, about 260 people
    assert "14 shops" in text and "260 people" in text
    return text, {
        "same": "Hartley's Bakery will open five new shops this year. It now has 14 shops.",
        "number": "Hartley's Bakery will open five new shops this year. It now has 41 shops.",
        "negated": "Hartley's Bakery will not open five new shops this year. It now has 14 shops.",
    }


class _FakeNlp:
    """spaCy's pipe() shape: capitalized words inside a sentence are entities."""

    def pipe(self, texts: list[str], batch_size: int = 64):
        for text in texts:
            words = [w.strip(",.;:\"'") for w in text.split()[1:]]
            ents = [SimpleNamespace(text=w, label_="ENT") for w in words if w[:1].isupper()]
            ents += [SimpleNamespace(text=w, label_="CARDINAL") for w in words if w.isdigit()]
            yield SimpleNamespace(ents=ents)


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HSS_RUN__CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_cli_malformed_line_exits_2_naming_the_line(runner: CliRunner, tmp_path: Path) -> None:
    pairs = _write_pairs(
        tmp_path / "pairs.jsonl",
        [
            {"id": "a", "document": "D.", "summary": "S."},
            '{"id": "b", "document": "D."',
            {"id": "c", "document": "D."},
        ],
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["factuality", "--pairs", str(pairs), "--out", str(out), "--weights", str(tmp_path / "w")],
    )
    assert result.exit_code == 2, result.output
    assert f"{pairs}:2: not valid JSON" in " ".join(result.output.split())
    assert "1 more bad lines" in result.output and "Traceback" not in result.output
    assert not out.exists() and not (tmp_path / "w").exists()  # validated before any work
    missing = runner.invoke(app, ["factuality", "--out", str(out)])
    assert missing.exit_code == 2 and "--pairs" in missing.output
    unknown = runner.invoke(
        app,
        [
            "factuality",
            "--pairs",
            str(
                _write_pairs(
                    tmp_path / "ok.jsonl", [{"id": "a", "document": "D.", "summary": "S."}]
                )
            ),
            "--model",
            "bart",
            "--weights",
            str(tmp_path / "w"),
        ],
    )
    assert unknown.exit_code == 2 and "unknown consistency model 'bart'" in unknown.output


def test_cli_on_fakes_writes_every_column(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nli_dir: Path
) -> None:
    import hss_gate.models.embedding
    import hss_gate.models.language

    monkeypatch.setattr(
        hss_gate.models.embedding, "SbertEmbedder", lambda *a, **k: HashingEmbedder(256)
    )
    monkeypatch.setattr(
        hss_gate.models.language, "SpacyTagger", lambda *a, **k: SimpleNamespace(nlp=_FakeNlp())
    )
    document, summaries = _pairs_from_corpus()
    pairs = _write_pairs(
        tmp_path / "pairs.jsonl",
        [{"id": k, "document": document, "summary": v} for k, v in summaries.items()],
    )
    weights = tmp_path / "w"
    args = [
        "factuality",
        "--model",
        "factcc",  # the earlier checker: trained here, with its Conv head
        "--pairs",
        str(pairs),
        "--weights",
        str(weights),
        "--corpus",
        str(_small_corpus(tmp_path / "corpus.jsonl", 8)),
    ]

    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "training the FactCC-style classifier" in result.output
    assert consistency_model.weights_path(weights).exists()
    rows = _read_csv(tmp_path / "out" / "factuality.csv")
    assert list(rows[0]) == list(pair_scorer.COLUMNS)
    assert [r["id"] for r in rows] == list(summaries)
    for row in rows:
        assert 0.0 <= float(row["consistency"]) <= 1.0
        assert row["consistency"] == row["summac_zs"] and row["summac_conv"] != ""
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["factuality.csv"]
    by_id = {r["id"]: r for r in rows}
    assert float(by_id["number"]["consistency"]) < float(by_id["same"]["consistency"])

    # second run: the stored weights are reused; an hf NLI model drives the SummaC column
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "hf"), "--model", f"hf:{nli_dir}"])
    assert again.exit_code == 0, again.output
    assert "training" not in again.output
    hf_rows = _read_csv(tmp_path / "hf" / "factuality.csv")
    nli = consistency_model.HfNliModel(str(nli_dir))
    for row, summary in zip(hf_rows, summaries.values(), strict=True):
        expected = aggregation.summac_zs(
            consistency_model.consistency_matrix(nli, document, features.split_sentences(summary))
        )
        assert float(row["summac_zs"]) == pytest.approx(expected, abs=1e-6)
        assert row["summac_conv"] == ""  # the Conv head belongs to the factcc matrix
        assert row["factcc"] == by_id[row["id"]]["factcc"]


def test_cli_on_the_embedded_models(runner: CliRunner, tmp_path: Path, real_toolkit) -> None:
    document, summaries = _pairs_from_corpus()
    pairs = _write_pairs(
        tmp_path / "pairs.jsonl",
        [{"id": k, "document": document, "summary": v} for k, v in summaries.items()],
    )
    result = runner.invoke(
        app,
        [
            "factuality",
            "--pairs",
            str(pairs),
            "--out",
            str(tmp_path / "out"),
            "--weights",
            str(tmp_path / "w"),
            "--corpus",
            str(_small_corpus(tmp_path / "c.jsonl", 8)),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in _read_csv(tmp_path / "out" / "factuality.csv")}
    for broken in ("number", "negated"):
        assert float(rows[broken]["consistency"]) < float(rows["same"]["consistency"]), broken
    weights = consistency_model.load_factcc_weights(tmp_path / "w")
    assert weights.provenance["documents"] == 8
    assert weights.provenance["dev_claim_auc"] > 0.7  # synthetic held-out documents


# --------------------------------------------------------------------------- external data


def _external(name: str) -> Path:
    path = EXTERNAL / name
    if not path.exists():
        pytest.skip(f"{path} not present (set HSS_EXTERNAL_DATA)")
    return path


def test_external_benchmarks_parse_with_the_expected_labels() -> None:
    summeval = factuality_data.summac_pairs(
        json.loads(_external("summac_summeval.json").read_text())
    )
    factcc = factuality_data.summac_pairs(json.loads(_external("summac_factcc.json").read_text()))
    qags = factuality_data.qags_pairs(_external("qags_mturk_cnndm.jsonl").read_text().splitlines())
    counts = {
        name: (len(p), sum(x.label == 0 for x in p))
        for name, p in (("summeval", summeval), ("factcc", factcc), ("qags", qags))
    }
    assert counts == {"summeval": (100, 37), "factcc": (311, 37), "qags": (235, 122)}
    # the cheapest comparator already separates SummEval's labels (see docs/FACTUALITY.md)
    precision = [features.overlap_scores(p.document, p.summary).precision for p in summeval]
    assert calibration.roc_auc([p.label for p in summeval], precision) > 0.8
    assert not math.isnan(
        calibration.roc_auc([p.label for p in qags], [len(p.summary) for p in qags])
    )


def test_the_invented_checker_is_selectable_and_sees_an_invented_detail() -> None:
    """consistency.model: invented (the lexical checker, GloVe word ranks) through load_checker.
    It punishes rewording too: "The council approved a new library that will open next year."
    scores 0.02 on this source (docs/CHECKER_DEV.md), which is why it is not the default."""
    from hss_gate.consistency.checker import load_checker

    checker = load_checker("invented", ".hss/factcc", None, encode=None, embedder="unused")
    source = (
        "The council approved a new library on Monday. It will open in the city centre next "
        "year and cost 4 million pounds, the mayor said."
    )
    faithful, invented = checker.check(
        [
            (source, "The council approved a new library on Monday."),  # copied
            (source, "Rebels in Texas seized a shipyard and demanded 40 million dollars."),
        ]
    )
    assert checker.fingerprint.startswith("invented-v1:")
    assert faithful.consistency > checker.threshold > invented.consistency
    assert invented.unsupported and not faithful.unsupported


def _labelled_pairs(n: int) -> list[dict[str, Any]]:
    """n copied source sentences (consistent) and n with an invented clause (not)."""
    from hss_gate.common.inputs import load_corpus
    from hss_gate.text.sentences import split_sentences

    docs = load_corpus(CORPUS)
    pairs = []
    for i in range(n):
        doc = docs[i % len(docs)]
        sentence = split_sentences(doc.text)[i // len(docs)]
        pairs.append({"id": f"c{i}", "document": doc.text, "summary": sentence, "label": 1})
        invented = f"Rebels from Texas seized {i + 40} tankers and demanded a ransom in gold."
        pairs.append({"id": f"x{i}", "document": doc.text, "summary": invented, "label": 0})
    return pairs


def test_calibrate_writes_the_threshold_into_the_params_file(
    runner: CliRunner, tmp_path: Path, real_toolkit
) -> None:
    from hss_gate.settings import load_settings

    params = tmp_path / "params.yaml"
    # calibrated here: invented-sbert, whose threshold the shipped params.yaml once carried
    # (the default entail's 0.5 is fixed, docs/FACTUALITY.md); the mechanism is the same
    text = (REPO / "params.yaml").read_text()
    params.write_text(text.replace("\n  model: entail ", "\n  model: invented-sbert ", 1))
    assert "model: invented-sbert" in params.read_text()
    before = params.read_text().splitlines()
    pairs = _write_pairs(tmp_path / "labelled.jsonl", _labelled_pairs(20))
    args = ["factuality", "--pairs", str(pairs), "--params", str(params), "--calibrate"]
    extra = ["--weights", str(tmp_path / "w"), "--corpus", str(_small_corpus(tmp_path / "c", 8))]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out"), *extra])
    assert result.exit_code == 0, result.output
    after = params.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1 and changed[0][1].startswith("  threshold: ")
    assert "calibrated on labelled.jsonl (40 pairs" in changed[0][1]
    threshold = load_settings(params).consistency.threshold
    rows = {
        r["id"]: float(r["consistency"]) for r in _read_csv(tmp_path / "out" / "factuality.csv")
    }
    below = {k for k, v in rows.items() if v < threshold}
    assert below == {k for k in rows if k.startswith("x")}  # separable here: every call right
    assert f"consistency.threshold 0.5648 -> {threshold:g}" in " ".join(result.output.split())


def test_calibrate_refuses_unlabelled_or_tiny_samples(runner: CliRunner, tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", params)
    few = _write_pairs(tmp_path / "few.jsonl", _labelled_pairs(3))
    bad = [{"id": "a", "document": "D.", "summary": "S.", "label": 2}]
    for pairs, message in (
        (few, "3 inconsistent and 3 consistent pairs; need at least 20 of each"),
        (_write_pairs(tmp_path / "bad.jsonl", bad), "label must be 1 (consistent) or 0 (not)"),
    ):
        args = ["factuality", "--pairs", str(pairs), "--params", str(params), "--calibrate"]
        extra = ["--weights", str(tmp_path / "w"), "--out", str(tmp_path / "out")]
        result = runner.invoke(app, [*args, *extra, "--corpus", str(CORPUS)])
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split())
    assert params.read_text() == (REPO / "params.yaml").read_text()
