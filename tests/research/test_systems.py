"""System level (research/systems.py, systems_run.py, `hss systems`): the humans' pairing and CI,
what each human verdict requires, the gate's real rule on per-document rows, the share rule, and
the run on tiny synthetic files with a fake checker (no models)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from hss_gate.consistency.verdict import Verdict
from hss_gate.research.systems import (
    HumanDifference,
    agreement,
    document_row,
    gate_call,
    human_differences,
    paired_t,
    read_judgements,
    share_call,
)
from hss_gate.research.systems_run import SystemsRequest, gate_for, run_systems
from hss_gate.settings import GateSettings, HssSettings

pytestmark = pytest.mark.unit

FRANK = Path("/work/shared/data/external/frank_cnndm")


def test_the_human_difference_is_paired_over_documents():
    """B is factual wherever A is, plus 10 more of 100 documents: paired, B is significantly
    better (an unpaired test of 0.50 against 0.60 would not be); the CI is Student-t's."""
    a = {f"d{i:03d}": float(i < 50) for i in range(100)}
    b = {f"d{i:03d}": float(i < 60) for i in range(100)}
    diffs = {(d.candidate, d.production): d for d in human_differences({"A": a, "B": b})}
    better, worse = diffs[("B", "A")], diffs[("A", "B")]
    diff = np.array([b[k] - a[k] for k in sorted(a)])
    half = stats.t.ppf(0.975, 99) * diff.std(ddof=1) / np.sqrt(100)
    assert better.difference == pytest.approx(0.10)
    assert (better.ci_low, better.ci_high) == pytest.approx((0.10 - half, 0.10 + half))
    assert better.ci_low > 0 and better.verdict == "better" and better.expected == "promote"
    assert worse.verdict == "worse" and worse.expected == "block"
    assert stats.ttest_ind(list(b.values()), list(a.values())).pvalue > 0.05  # unpaired: n.s.


def test_pairing_is_by_doc_id_not_by_file_order(tmp_path):
    """The same labels listed in another order: every paired difference is exactly zero."""
    lines = [{"doc_id": f"d{i}", "system": "A", "factual": i % 3 == 0} for i in range(30)]
    lines += [{"doc_id": f"d{i}", "system": "B", "factual": i % 3 == 0} for i in range(29, -1, -1)]
    lines.append({"doc_id": "extra", "system": "B", "factual": 1})  # only B: not paired
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (d, _) = human_differences(read_judgements(path))
    assert d.documents == 30
    assert (d.difference, d.ci_low, d.ci_high) == (0.0, 0.0, 0.0)
    assert d.verdict == "neither" and d.expected == "either"


def test_a_ci_touching_zero_is_neither():
    assert HumanDifference("a", "b", 9, 0.5, 0.4, 0.1, 0.0, 0.2).verdict == "neither"
    assert HumanDifference("a", "b", 9, 0.5, 0.4, 0.1, -1e-9, 0.2).verdict == "neither"
    assert HumanDifference("a", "b", 9, 0.3, 0.4, -0.1, -0.2, -1e-9).verdict == "worse"
    assert paired_t([1.0], [0.0], 0.95) == (1.0, 1.0, 1.0)


def test_agreement_counts_every_cell():
    rows = [
        {"human": "worse", "decision": "block"},
        {"human": "worse", "decision": "promote"},
        {"human": "better", "decision": "promote"},
        {"human": "better", "decision": "block"},
        {"human": "neither", "decision": "block"},
        {"human": "neither", "decision": "promote"},
        {"human": "neither", "decision": "promote"},
    ]
    counts = agreement(rows)
    assert counts == {
        "worse": 2,
        "worse_blocked": 1,
        "better": 2,
        "better_promoted": 1,
        "neither": 3,
        "neither_blocked": 1,
        "neither_promoted": 2,
        "right": 2,
        "wrong": 2,
    }
    assert agreement([r | {"other": "block"} for r in rows], "other")["worse_blocked"] == 2


def _rows(consistency, threshold=0.5, unsupported=None):
    unsupported = unsupported if unsupported is not None else [0.0] * len(consistency)
    return [
        document_row(f"d{i:03d}", c, threshold, u)
        for i, (c, u) in enumerate(zip(consistency, unsupported, strict=True))
    ]


def test_a_document_without_hss_is_not_measured_never_hss_zero():
    """No perturbations here: the rows' HSS is "not measured" as the gate has it (NaN, so
    hss_measured is false and the HSS comparison is skipped with a note), never 0.0 on both
    sides compared as equal HSS."""
    from hss_gate.decision.paired_comparison import compare, hss_measured
    from hss_gate.decision.rule import decide

    cand, prod = _rows([0.9, 0.8, 0.7, 0.6]), _rows([0.9, 0.9, 0.8, 0.7])
    assert all(r["hss"] != 0.0 and np.isnan(r["hss"]) for r in cand + prod)
    assert not hss_measured(cand, prod)
    comparison = compare(cand, prod, resamples=50)
    assert comparison["hss_measured"] is False
    assert comparison["candidate_hss_ci"] is None and comparison["categories"] == []
    assert not {"hss", "hss_raw", "consistency_drop_mean"} & set(comparison["signals"])
    assert "base_consistency" in comparison["signals"]  # the facts are still compared
    codes = [f.code for f in decide(comparison, [], GateSettings()).findings]
    assert "hss.not_measured" in codes and "hss.rise" not in codes


def test_the_gate_blocks_a_clear_fall_early_and_promotes_an_equal_system():
    rng = np.random.default_rng(0)
    prod = rng.uniform(0.6, 1.0, 100)
    worse = np.clip(prod - 0.3 + rng.normal(0, 0.05, 100), 0, 1)
    gate = GateSettings(
        alpha_spending="bonferroni", consistency_margin=0.10, consistency_margin_scale="checker"
    )
    blocked = gate_call(_rows(worse), _rows(prod), gate)
    # looks 8, 16, 32, 64, 100: the first one (8 documents) blocks
    assert blocked.decision == "block" and blocked.documents == 8
    assert blocked.looks[0]["consistency"]["ci"][1] < -gate.consistency_margin
    same = gate_call(_rows(prod), _rows(prod), gate)
    assert same.decision == "promote" and same.documents == 8  # clearly not worse at once
    single = gate_call(_rows(worse), _rows(prod), gate, sequential=False)
    assert single.decision == "block" and single.documents == 100 and len(single.looks) == 1
    # the look's level is Bonferroni-spent: 1 - 0.05 / 5
    assert blocked.looks[0]["confidence"] == pytest.approx(0.99)
    assert single.looks[0]["confidence"] == pytest.approx(0.95)


def test_the_gate_looks_where_gate_looks_says_at_its_spending_levels():
    """`hss systems` replays `hss gate`'s look plan: gate.looks and gate.alpha_spending."""
    from hss_gate.decision.sequential import look_levels

    rng = np.random.default_rng(0)
    prod = rng.uniform(0.6, 1.0, 100)
    worse = np.clip(prod - 0.3 + rng.normal(0, 0.05, 100), 0, 1)
    gate = GateSettings(looks=[30, 60], alpha_spending="obrien-fleming")
    blocked = gate_call(_rows(worse), _rows(prod), gate)
    assert blocked.decision == "block" and blocked.documents == 30
    first = look_levels(0.95, [30, 60], "obrien-fleming")[0]
    assert blocked.looks[0]["confidence"] == pytest.approx(first) and first > 0.99
    equal = gate_call(_rows(prod + rng.normal(0, 0.3, 100)), _rows(prod), gate)
    assert equal.documents in (30, 60)  # the last configured look ends it


def test_the_gate_pairs_rows_by_doc_id_not_by_their_order():
    """Production's rows in reverse order: paired by doc_id the systems are identical (promote
    at the first look); paired by position the first look would compare 0.2-0.36 with 0.84-1."""
    prod = _rows(np.linspace(0.2, 1.0, 100))
    call = gate_call(prod, list(reversed(prod)), GateSettings())
    assert call.decision == "promote" and call.documents == 8
    assert call.looks[0]["consistency"]["difference"] == 0.0


def test_a_small_fall_within_the_margin_is_promoted():
    rng = np.random.default_rng(1)
    prod = rng.uniform(0.6, 1.0, 200)
    cand = prod - 0.01  # significant, but within the 0.03 margin
    assert gate_call(_rows(cand), _rows(prod), GateSettings()).decision == "promote"
    assert gate_call(
        _rows(cand),
        _rows(prod),
        GateSettings(consistency_margin=0.0, consistency_margin_scale="checker"),
    ).decision == ("block")


def test_unsupported_entities_decide_too():
    prod = [0.9] * 60
    gate = GateSettings()
    call = gate_call(_rows(prod, unsupported=[0.5] * 60), _rows(prod), gate)
    assert call.decision == "block"  # unsupported share +0.5, beyond its margin 0.02


def test_the_absolute_share_bound_follows_production_off_the_reference_corpus():
    """Production already has 60% of its summaries below the threshold: the absolute bound 0.5
    would block the candidate (also 60%) at the last look; relative to production it does not."""
    cons = [0.2] * 36 + [0.9] * 24
    rows = _rows(cons)
    gate = GateSettings(max_low_consistency_share=0.5)
    absolute = gate_call(rows, rows, gate, relative=False, sequential=False)
    assert absolute.decision == "block"
    assert absolute.looks[-1]["failed_checks"] == ["facts.low_consistency_share"]
    relative = gate_call(rows, rows, gate, sequential=False)
    assert relative.decision == "promote" and relative.looks[-1]["failed_checks"] == []


def test_the_share_rule_blocks_a_significant_rise_beyond_its_margin():
    prod = _rows([0.9] * 80 + [0.1] * 20)  # 20% below the threshold
    cand = _rows([0.1] * 60 + [0.9] * 20 + [0.1] * 20)  # 80%
    decision, diff, low, _ = share_call(cand, prod, margin=0.02)
    assert decision == "block" and diff == pytest.approx(0.6) and low > 0.02
    assert share_call(prod, cand)[0] == "promote"
    assert share_call(prod, prod)[0] == "promote"
    assert share_call(cand, prod, margin=0.7)[0] == "promote"


class FakeChecker:
    """Consistency 0.1 for a summary that says WRONG, 0.9 otherwise; counts what it checks."""

    fingerprint = "fake-systems-checker"
    threshold = 0.5

    def __init__(self) -> None:
        self.checked = 0

    def check(self, pairs):
        self.checked += len(pairs)
        return [Verdict(0.1 if "WRONG" in summary else 0.9) for _, summary in pairs]


def _files(tmp_path, n=40):
    """good: always right; bad: wrong on 60% of documents; twin: good's twin."""
    docs = [{"doc_id": f"d{i:02d}", "document": f"Document {i} says things."} for i in range(n)]
    rows = []
    for i in range(n):
        for system, wrong in (("good", False), ("bad", i % 5 < 3), ("twin", False)):
            summary = f"Summary {i} of {system}" + (" WRONG" if wrong else "")
            rows.append(
                {"doc_id": f"d{i:02d}", "system": system, "summary": summary, "factual": not wrong}
            )
    (tmp_path / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "summaries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "summaries.jsonl", tmp_path / "documents.jsonl"


def test_the_run_writes_every_ordered_pair_and_caches_verdicts(tmp_path):
    summaries, documents = _files(tmp_path)
    request = SystemsRequest(summaries=summaries, documents=documents, out=tmp_path / "out")
    checker = FakeChecker()
    cache = str(tmp_path / "cache")
    result = run_systems(request, HssSettings(), checker=checker, cache_dir=cache)
    assert checker.checked == 120
    pairs = {(r["candidate"], r["production"]): r for r in result.rows}
    assert len(pairs) == 6
    assert pairs[("bad", "good")]["human"] == "worse"
    assert pairs[("bad", "good")]["decision"] == "block"
    assert pairs[("bad", "good")]["documents_used"] < 40  # settled before the last look
    assert pairs[("good", "bad")]["human"] == "better"
    assert pairs[("good", "bad")]["decision"] == "promote"
    assert pairs[("twin", "good")]["human"] == "neither"
    assert pairs[("twin", "good")]["single"] == "promote"
    assert pairs[("bad", "good")]["share_0.02"] == "block"
    counts = result.agreement["decision"]
    assert (counts["worse_blocked"], counts["worse"]) == (2, 2)
    assert (counts["better_promoted"], counts["better"]) == (2, 2)
    written = json.loads((tmp_path / "out" / "systems.json").read_text())
    assert written["agreement"] == result.agreement
    assert "| bad vs good |" in (tmp_path / "out" / "systems.md").read_text()
    again = FakeChecker()
    run_systems(request, HssSettings(), checker=again, cache_dir=cache)
    assert again.checked == 0  # every verdict from the cache


def test_the_weights_margins_apply_unless_given(tmp_path):
    class Weights:
        margin, max_low_share = 0.07, 0.6

    class Invented:
        weights = Weights()

    request = SystemsRequest(summaries=tmp_path, documents=tmp_path, out=tmp_path)
    gate = gate_for(GateSettings(), Invented(), request)
    assert (gate.consistency_margin, gate.max_low_consistency_share) == (0.07, 0.6)
    request.consistency_margin = 0.01
    assert gate_for(GateSettings(), Invented(), request).consistency_margin == 0.01
    assert gate_for(GateSettings(), object(), request).max_low_consistency_share == (
        GateSettings().max_low_consistency_share
    )


def _cli(*args):
    from hss_gate.cli import app

    return CliRunner().invoke(app, ["systems", *map(str, args)])


def test_bad_input_is_one_line(tmp_path):
    summaries, documents = _files(tmp_path, n=3)
    done = _cli("--summaries", tmp_path / "nope.jsonl", "--documents", documents)
    assert done.exit_code == 2 and "--summaries" in done.output and "no such file" in done.output
    one = tmp_path / "one.jsonl"
    one.write_text(summaries.read_text().splitlines()[0] + "\n")
    done = _cli("--summaries", one, "--documents", documents, "--cache-dir", tmp_path / "c")
    assert done.exit_code == 2 and "at least two systems" in done.output
    done = _cli(
        "--summaries",
        summaries,
        "--documents",
        documents,
        "--checker",
        "sbert",
        "--weights",
        documents,
        "--cache-dir",
        tmp_path / "c",
    )
    assert done.exit_code == 2 and "--weights is for the checkers" in done.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "d0", "system": "a"}\n')
    done = _cli("--summaries", bad, "--documents", documents, "--cache-dir", tmp_path / "c")
    assert done.exit_code == 2 and "bad.jsonl:1" in done.output


@pytest.mark.skipif(not FRANK.is_dir(), reason="frank_cnndm is not on this machine")
def test_frank_cnndm_runs_end_to_end_with_a_fake_checker(tmp_path):
    request = SystemsRequest(
        summaries=FRANK / "summaries.jsonl", documents=FRANK / "documents.jsonl", out=tmp_path
    )
    result = run_systems(
        request, HssSettings(), checker=FakeChecker(), cache_dir=str(tmp_path / "c")
    )
    assert len(result.rows) == 20
    assert {r["documents"] for r in result.rows} == {250}
    assert sum(r["human"] != "neither" for r in result.rows) > 0


WORDS = (
    "the council met on monday and spoke at length about the plans for new homes roads and schools"
)


def _gate_files(tmp_path, n=40):
    """Four systems on n documents: `good` summarizes, `bad` says WRONG (the fake checker's 0.1)
    on 60% of them, `twin` is good's twin, `copy` copies the document (factual to humans, but
    not a summary: only the real gate's not-summarizing check sees it)."""
    docs = [{"doc_id": f"d{i:02d}", "document": f"Report {i}: {WORDS} {WORDS}."} for i in range(n)]
    rows = []
    for i, doc in enumerate(docs):
        good = f"Report {i}: the council spoke about plans for homes and roads."
        systems = {
            "good": good,
            "bad": good + (" WRONG" if i % 5 < 3 else ""),
            "twin": good,
            "copy": doc["document"],
        }
        for system, summary in systems.items():
            rows.append(
                {
                    "doc_id": doc["doc_id"],
                    "system": system,
                    "summary": summary,
                    "factual": "WRONG" not in summary,
                }
            )
    (tmp_path / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "summaries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "summaries.jsonl", tmp_path / "documents.jsonl"


def test_through_gate_runs_the_real_gate_on_every_pair_with_one_cache(tmp_path, monkeypatch):
    """--through-gate: each pair through run_gate on summaries: URIs (decision.json in
    OUT/gates/A-vs-B), the inventing system blocked and the reverse promoted; the copying system
    blocked by the gate's not-summarizing check, which the function-level rule does not have;
    every summary checked once for the function-level rule and the 12 gate runs together."""
    from hss_gate.models.embedding import HashingEmbedder
    from hss_gate.scoring.toolkit import Toolkit
    from tests.conftest import REPO, FakeTagger
    from tests.unit.test_perturb import LEXICON, VECTORS

    checker = FakeChecker()
    tools = Toolkit(
        tagger=FakeTagger(),
        vectors=VECTORS,
        lexicon=LEXICON,
        embedder=HashingEmbedder(),
        checker=checker,
    )
    built = []

    def toolkit(settings):
        built.append(settings.run.cache_dir)
        return tools

    monkeypatch.chdir(REPO)  # the gate reads score.normalization from the repository
    monkeypatch.setattr("hss_gate.scoring.toolkit.real_toolkit", toolkit)
    monkeypatch.setenv("HSS_SCORE__BOOTSTRAP_RESAMPLES", "100")
    summaries, documents = _gate_files(tmp_path)
    out, cache = tmp_path / "out", str(tmp_path / "cache")
    request = SystemsRequest(summaries=summaries, documents=documents, out=out, through_gate=True)
    said = []
    result = run_systems(request, HssSettings(), checker=checker, cache_dir=cache, say=said.append)
    # each distinct summary once (good = twin; bad = good on 16 documents): the gate runs read
    # the shared cache
    assert checker.checked == 40 + 24 + 40
    assert built == [cache]  # one toolkit for every pair, on the shared cache
    pairs = {(r["candidate"], r["production"]): r for r in result.rows}
    assert len(pairs) == 12
    for (a, b), row in pairs.items():
        written = json.loads((out / "gates" / f"{a}-vs-{b}" / "decision.json").read_text())
        assert row["gate"] == row["gate_run"]["decision"] == written["decision"]
        assert row["gate_run"]["decided_by"] == written["decided_by"]
        assert (
            row["gate_run"]["documents_used"] == written["metrics"]["sequential"]["documents_used"]
        )
        assert written["metrics"]["pairing"]["paired"] == 40
        assert written["candidate"].endswith(f"?system={a}")
        assert written["production"].endswith(f"?system={b}")
    bad = pairs[("bad", "good")]
    assert bad["human"] == "worse" and bad["gate"] == "block"
    assert "consistency" in bad["gate_run"]["decided_by"]
    assert pairs[("good", "bad")]["human"] == "better"
    assert pairs[("good", "bad")]["gate"] == "promote"
    assert pairs[("twin", "good")]["gate"] == "promote"
    copied = pairs[("copy", "good")]
    assert copied["human"] == "neither" and copied["decision"] == "promote"  # function level
    assert copied["gate"] == "block" and "not_summarizing" in copied["gate_run"]["decided_by"]
    counts = result.agreement["gate"]
    assert (counts["worse_blocked"], counts["worse"]) == (3, 3)  # bad vs good, twin, copy
    # copy vs bad: humans find the copy better; the gate blocks a copy all the same
    assert (counts["better_promoted"], counts["better"]) == (2, 3)
    assert pairs[("copy", "bad")]["gate"] == "block"
    assert sum(line.startswith("gate ") and " s; function-level: " in line for line in said) == 12
    written = json.loads((out / "systems.json").read_text())
    assert written["agreement"]["gate"] == counts
    text = (out / "systems.md").read_text()
    assert "hss gate |" in text and "| copy vs good |" in text
    assert "decided as the function-level sequential rule on 9 of 12 pairs" in text


def test_without_through_gate_no_gate_runs_and_no_gate_column(tmp_path, monkeypatch):
    def no_gate(*args, **kwargs):
        raise AssertionError("the gate ran")

    monkeypatch.setattr("hss_gate.research.systems_gate.gate_pair", no_gate)
    summaries, documents = _files(tmp_path, n=10)
    request = SystemsRequest(summaries=summaries, documents=documents, out=tmp_path / "o")
    result = run_systems(request, HssSettings(), checker=FakeChecker(), cache_dir=str(tmp_path))
    assert "gate" not in result.agreement and "gate" not in result.rows[0]
    assert " hss gate |" not in (tmp_path / "o" / "systems.md").read_text()


def test_through_gate_refuses_weights_the_gate_cannot_use(tmp_path):
    summaries, documents = _files(tmp_path, n=3)
    done = _cli(
        "--summaries",
        summaries,
        "--documents",
        documents,
        "--checker",
        "invented-sbert",
        "--weights",
        documents,
        "--through-gate",
        "--cache-dir",
        tmp_path / "c",
    )
    assert done.exit_code == 2 and "--through-gate" in done.output


def test_systems_are_ranked_by_mean_consistency_against_each_human_mean(tmp_path):
    """Spearman over the systems' means: consistency order a > b > c > d; human `factual`
    order a > c > b > d (rho 0.8), `factuality` exactly reversed (rho -1)."""
    from hss_gate.research.systems_gate import spearman

    cons = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.3}
    factual = {"a": 1.0, "b": 0.5, "c": 0.75, "d": 0.0}
    lines = []
    for system in cons:
        for i in range(4):
            lines.append(
                {
                    "doc_id": f"d{i}",
                    "system": system,
                    "factual": float(i < factual[system] * 4),
                    "factuality": 1 - cons[system] + 0.01 * i,
                }
            )
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = {s: _rows([c, c]) for s, c in cons.items()}
    rank = spearman(rows, path)
    assert rank["factual"]["rho"] == pytest.approx(0.8)
    assert rank["factual"]["means"]["c"] == {"consistency": 0.5, "human": 0.75}
    assert rank["factuality"]["rho"] == pytest.approx(-1.0)
    without = tmp_path / "f.jsonl"
    without.write_text("".join(json.dumps(x | {"factuality": None}) + "\n" for x in lines))
    assert set(spearman(rows, without)) == {"factual"}  # null factuality: not a label


def test_a_constant_ranking_has_no_rho(tmp_path):
    from hss_gate.research.systems_gate import spearman

    lines = [{"doc_id": "d0", "system": s, "factual": f} for s, f in (("a", 1), ("b", 0), ("c", 1))]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rank = spearman({s: _rows([0.5]) for s in "abc"}, path)
    assert rank["factual"]["rho"] is None and rank["factual"]["p"] is None
