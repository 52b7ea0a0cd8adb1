"""The generation section of `hss bench`: totals, rates and shares from llama.cpp's timings,
the stored run's length statistics, and the Markdown rows."""

import json

import pytest

from hss_gate.research.generation_bench import engine_totals, markdown, production_lengths

pytestmark = pytest.mark.unit

TIMINGS = [
    {"prompt_n": 500, "cache_n": 40, "prompt_ms": 5000.0, "predicted_n": 80, "predicted_ms": 4000},
    {"prompt_n": 300, "cache_n": 0, "prompt_ms": 3000.0, "predicted_n": 20, "predicted_ms": 1000},
]


def test_engine_totals_divide_tokens_by_their_own_time():
    totals = engine_totals(TIMINGS)
    assert totals["prefill_tokens"] == 800 and totals["reused_tokens"] == 40
    assert totals["prompt_tokens"] == 840
    assert totals["prefill_tok_s"] == 100.0  # 800 tokens in 8 s
    assert totals["decode_tok_s"] == 20.0  # 100 tokens in 5 s
    assert totals["prefill_share"] == pytest.approx(8 / 13, abs=1e-3)
    assert totals["drafted"] == 0 and totals["requests"] == 2


def test_no_requests_give_no_rates():
    totals = engine_totals([])
    assert totals["prefill_tok_s"] is None and totals["prefill_share"] is None


def _stored_run(tmp_path, summaries):
    folder = tmp_path / "reference"
    folder.mkdir()
    rows = [
        {"doc_id": f"d{i}", "strength": strength, "index": 0, "summary": summary}
        for i, (strength, summary) in enumerate(summaries)
    ]
    (folder / "summaries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_production_lengths_count_cut_and_long_summaries(tmp_path):
    baseline = _stored_run(
        tmp_path,
        [
            ("base", "One full sentence here."),
            ("base", "A summary cut off in the"),
            ("low", " ".join(["word"] * 31) + "."),
        ],
    )
    lengths = production_lengths(baseline, summary_words=10)
    assert lengths["all"]["summaries"] == 3
    assert lengths["all"]["cut_mid_sentence_share"] == pytest.approx(1 / 3, abs=1e-3)
    assert lengths["all"]["overlong_share"] == pytest.approx(1 / 3, abs=1e-3)  # 31 > 3 x 10
    assert lengths["originals"]["summaries"] == 2
    assert lengths["originals"]["mean_words"] == 5.0  # (4 + 6) / 2
    assert lengths["originals"]["mean_over_asked"] == 0.5


def test_markdown_has_a_row_per_model_and_way():
    way = engine_totals(TIMINGS) | {"same_as_plain": 1.0, "wall_s": 13.0}
    generation = {
        "documents": 1,
        "models": {
            "gguf:qwen": {"ways": {"plain": way | {"same_as_stored_run": 0.5}, "ngram": way}},
        },
    }
    lines = markdown(generation, None)
    rows = [line for line in lines if line.startswith("| gguf:qwen")]
    assert len(rows) == 2
    assert "| 40 of 840 |" in rows[0] and rows[0].endswith("| 100% | 50% |")
    assert rows[1].endswith("| 100% | - |")
