"""Run every `hss bench` measurement in order and write bench.json, bench.md and figures."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hss_gate.research.attribution_bench import TARGET_S_PER_EVALUATION, attribution_lines
from hss_gate.research.bench import (
    BenchPlan,
    Measured,
    linear_fit,
    machine,
    ratios,
    run_timed,
    write_subset,
)
from hss_gate.research.generation_bench import markdown as generation_markdown
from hss_gate.research.generation_bench import production_lengths

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}
SLOTS_ENV = {
    "HSS_GENERATE__THREADS": "0",
    "HSS_GENERATE__PARALLEL": "4",
    "HSS_GENERATE__WORKERS": "1",
}


class BenchRun:
    """The work directory, the corpus subsets and one timed process per step."""

    def __init__(self, plan: BenchPlan, params: Path, out: Path, say: Callable[[str], None]):
        from hss_gate.common.inputs import load_corpus
        from hss_gate.settings import load_settings

        self.plan, self.params, self.out, self.say = plan, params.resolve(), out, say
        self.settings = load_settings(self.params)
        self.corpus = load_corpus(self.settings.run.corpus)
        self.work = out / "work"
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        self.steps: dict[str, Measured] = {}

    def corpus_of(self, n: int) -> Path:
        return write_subset(self.corpus, n, self.work / f"corpus-{n or 'all'}.jsonl")

    def _record(self, name: str, measured: Measured) -> Measured:
        self.steps[name] = measured
        self.say(f"{name:<22} {measured.seconds:>8.1f} s   peak {measured.peak_rss_mb:>6.0f} MiB")
        return measured

    def score(self, name: str, n: int, k: int | None = None, cache: str | None = None) -> Measured:
        """`hss score` as a user runs it, on the first n documents."""
        cmd = [sys.executable, "-m", "hss_gate", "score", "--model", self.plan.model]
        cmd += ["--corpus", str(self.corpus_of(n)), "--out", str(self.work / f"out-{name}")]
        cmd += ["--params", str(self.params)] + (["-k", str(k)] if k else [])
        env = OFFLINE_ENV | {"HSS_RUN__CACHE_DIR": str(self.work / f"cache-{cache or name}")}
        return self._record(name, run_timed(cmd, env, say=self.say, name=name))

    def stage(self, name: str, stage: str, config: dict[str, Any], env: dict[str, str]) -> Measured:
        """One in-process stage of hss_gate.research.bench."""
        config = {
            "params": str(self.params),
            "model": self.plan.model,
            "cache": str(self.work / f"cache-{name}"),
        } | config
        config_path, result_path = self.work / f"{name}.json", self.work / f"{name}.result.json"
        config_path.write_text(json.dumps(config))
        cmd = [
            sys.executable,
            "-m",
            "hss_gate.research.bench",
            stage,
            str(config_path),
            str(result_path),
        ]
        return self._record(name, run_timed(cmd, OFFLINE_ENV | env, result_path, self.say, name))

    def gate(self, name: str, candidate: str, n: int, full: bool) -> Measured:
        """`hss gate` as a user runs it, cold: an empty cache, so production is restored from
        the versioned baseline and only the candidate generates."""
        out = self.work / f"out-{name}"
        cmd = [sys.executable, "-m", "hss_gate", "gate", *self.candidate_options(candidate)]
        cmd += ["--corpus", str(self.corpus_of(n)), "--out", str(out)]
        cmd += ["--params", str(self.params)] + (["--full"] if full else [])
        env = OFFLINE_ENV | {"HSS_RUN__CACHE_DIR": str(self.work / f"cache-{name}")}
        measured = run_timed(cmd, env, say=self.say, name=name, exit_codes=(0, 1))
        measured.result = gate_record(json.loads((out / "decision.json").read_text()))
        return self._record(name, measured)

    def candidate_options(self, candidate: str) -> list[str]:
        """`--candidate URI`, or `--candidate-config FILE` for a .yaml candidate (a relative
        path is taken from the working directory, else from beside params.yaml)."""
        if not candidate.endswith((".yaml", ".yml")):
            return ["--candidate", candidate]
        path = Path(candidate)
        if not path.is_absolute() and not path.exists():
            path = self.params.parent / candidate
        return ["--candidate-config", str(path.resolve())]

    def quickstart(self) -> Measured | None:
        """The README's `make quickstart` after setup, on an empty cache (None without the
        repository's Makefile, as in an installed package)."""
        repo = Path(__file__).resolve().parents[2]
        if not (repo / "Makefile").exists() or shutil.which("make") is None:
            self.say("quickstart: no Makefile beside the package: not measured")
            return None
        cmd = ["make", "-s", "-o", "setup", "quickstart"]
        cmd += [f"QUICKSTART_OUT={self.work / 'out-quickstart'}"]
        env = OFFLINE_ENV | {"HSS_RUN__CACHE_DIR": str(self.work / "cache-quickstart")}
        return self._record(
            "quickstart", run_timed(cmd, env, say=self.say, name="quickstart", cwd=repo)
        )

    def dask(self, workers: int, n: int) -> Measured:
        """The baseline flow's scoring step through Prefect + Dask with local workers."""
        name = f"dask_{workers}_workers"
        cmd = [sys.executable, "-m", "flows.baseline", "--stage", "scores"]
        cmd += ["--model", self.plan.model, "--corpus", str(self.corpus_of(n))]
        cmd += ["--out", str(self.work / f"out-{name}"), "--params", str(self.params)]
        cmd += ["--workers", str(workers)]
        env = OFFLINE_ENV | {
            "HSS_RUN__CACHE_DIR": str(self.work / f"cache-{name}"),
            "PREFECT_HOME": str(self.work / f"prefect-{name}"),
            # each Dask worker runs its own summarizer: one llama.cpp copy per worker
            "HSS_GENERATE__WORKERS": "1" if workers > 1 else "0",
        }
        return self._record(name, run_timed(cmd, env, say=self.say, name=name))


def run_bench(
    plan: BenchPlan, params: Path, out: Path, say: Callable[[str], None] = print
) -> dict[str, Any]:
    """Measure everything the plan names; write out/bench.json, bench.md and figures."""
    run = BenchRun(plan, params, out, say)
    n_main = plan.documents or len(run.corpus)
    n_sample = min(plan.sample, n_main)
    k = run.settings.perturb.k
    say(f"hss bench: {plan.model}, {n_main} documents (sample {n_sample}), K={k}")

    cold = run.score("cold", n_main, cache="main")
    warm = run.score("warm", n_main, cache="main")
    cache_main = str(run.work / "cache-main")
    floor = run.stage(
        "floor",
        "floor",
        {"corpus": str(run.corpus_of(n_main)), "cache": cache_main, "reference_cache": cache_main},
        {},
    )
    sample = sample_steps(run, plan, n_main, n_sample, cold) if n_sample else {}
    shap = (
        run.stage(
            "shap",
            "shap",
            {
                "corpus": str(run.corpus_of(plan.shap_documents)),
                "shap_documents": plan.shap_documents,
            },
            {},
        )
        if plan.shap_documents
        else None
    )
    sentence_shap = (
        run.stage(
            "sentence_shap",
            "sentence_shap",
            {
                "corpus": str(run.corpus_of(0)),
                "documents": plan.sentence_shap_documents,
                "per_sentence": plan.sentence_shap_per_sentence,
                "reference_factor": plan.sentence_shap_reference_factor,
                "self_documents": plan.sentence_shap_self_documents,
                "max_sentences": plan.sentence_shap_max_sentences,
                "methods": plan.sentence_shap_methods,
            },
            {},
        )
        if plan.sentence_shap_documents
        else None
    )
    checker = (
        run.stage("checker", "checker", {"documents": plan.checker_documents}, {})
        if plan.checker_documents
        else None
    )
    if checker is not None and "skipped" in checker.result:
        say(f"checker: {checker.result['skipped']}: not measured")
    generation = (
        run.stage(
            "generation",
            "generation",
            {"models": plan.generation_models, "documents": plan.generation_documents},
            {},
        )
        if plan.generation_models
        else None
    )
    gates: dict[str, dict[str, Any]] = {}
    for i, candidate in enumerate(plan.gate_candidates):
        for full in (False, True) if plan.gate_full else (False,):
            name = f"gate_cold_{i}" + ("_full" if full else "")
            measured = run.gate(name, candidate, plan.gate_documents, full)
            record = measured.result | {"seconds": measured.seconds}
            gates.setdefault(candidate, {})["full" if full else "sequential"] = record
    quickstart = run.quickstart() if plan.quickstart else None

    times = {
        "cold_s": cold.seconds,
        "warm_s": warm.seconds,
        "floor_s": floor.seconds,
        "floor_generation_only_s": round(floor.result["seconds"], 2),
    } | sample.get("times", {})
    skipped = {"skipped": "not in this plan"}
    bench = {
        **{
            key: None if value is None else round(value, 4)
            for key, value in ratios(times, shap.result if shap else skipped).items()
        },
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "plan": asdict(plan),
        "settings": {
            "k": k,
            "strengths": list(run.settings.perturb.strengths),
            "generate": run.settings.generate.model_dump(exclude={"system_prompt", "prompt"}),
            "shap_max_evals": run.settings.experiment.shap_max_evals,
            "lime_samples": run.settings.experiment.lime_samples,
            "attribution_perturbations": run.settings.experiment.attribution_perturbations,
            "attribution_backend": run.settings.experiment.attribution_backend,
            "attribution_dtype": run.settings.experiment.attribution_dtype,
            "attribution_workers": run.settings.experiment.attribution_workers,
        },
        "documents": n_main,
        "sample_documents": n_sample,
        "times": times,
        "generations": {"pipeline": floor.result["generations"]} | sample.get("generations", {}),
        "floor_same_summaries": {"workers": floor.result["same_as_pipeline"]}
        | sample.get("floor_same_summaries", {})
        | {"of": floor.result["generations"]},
        "floor_slots_over_floor": sample.get("floor_slots_over_floor"),
        "peak_rss_mb": {name: m.peak_rss_mb for name, m in run.steps.items()},
        "steps_s": {name: m.seconds for name, m in run.steps.items()},
        "scaling": sample.get("scaling", scaling({n_main: cold.seconds}, {k: cold.seconds})),
        "dask_s": sample.get("dask_s", {}),
        "shap": shap.result if shap else skipped,
        "sentence_shap": sentence_shap.result if sentence_shap else skipped,
        "naive_hss": sample.get("naive_hss"),
        "gate_estimate": sample.get("gate_estimate"),
        "gate_cold_s": gates[plan.gate_candidates[0]]["sequential"]["seconds"] if gates else None,
        "gate_cold": gates,
        "quickstart_s": None if quickstart is None else quickstart.seconds,
        "checker": checker.result if checker else skipped,
        "generation": generation.result if generation else skipped,
        "production_lengths": production_lengths(
            run.settings.run.baseline_dir, run.settings.generate.summary_words
        ),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(bench, indent=2, default=float) + "\n")
    write_figures(bench, out / "figures")
    (out / "bench.md").write_text(markdown(bench))
    return bench


def sample_steps(
    run: BenchRun, plan: BenchPlan, n_main: int, n_sample: int, cold: Measured
) -> dict[str, Any]:
    """The steps on the first few documents: the cold sample, its floors (as configured,
    through parallel slots, for the other models), the naive pipeline, the cost scaling over
    documents and K, and the Dask route."""
    k = run.settings.perturb.k
    cold_sample = cold if n_sample == n_main else run.score("cold_sample", n_sample)
    cache_sample = str(run.work / f"cache-{'main' if n_sample == n_main else 'cold_sample'}")
    sample = {"corpus": str(run.corpus_of(n_sample)), "cache": cache_sample}
    floor_sample = run.stage(
        "floor_sample", "floor", sample | {"reference_cache": cache_sample}, {}
    )
    slots = run.stage(
        "floor_slots_sample",
        "floor",
        sample
        | {
            "reference_cache": cache_sample,
            "reference_fingerprint": floor_sample.result["fingerprint"],
        },
        SLOTS_ENV,
    )
    others = {
        uri: run.stage(f"floor_sample_{i}", "floor", sample | {"model": uri}, {})
        for i, uri in enumerate(plan.other_models)
    }
    naive = run.stage("naive_sample", "naive", {"corpus": sample["corpus"]}, {})

    by_documents = {n_sample: cold_sample.seconds, n_main: cold.seconds}
    for n in plan.scale_documents:
        if n not in by_documents and n < n_main:
            by_documents[n] = run.score(f"cold_{n}_documents", n).seconds
    by_k = {k: cold_sample.seconds}
    for kk in plan.scale_k:
        if kk not in by_k:
            by_k[kk] = run.score(f"cold_sample_k{kk}", n_sample, k=kk).seconds
    dask = {w: run.dask(w, n_sample).seconds for w in (1, 2)} if plan.dask else {}
    return {
        "times": {
            "cold_sample_s": cold_sample.seconds,
            "floor_sample_s": floor_sample.seconds,
            "floor_slots_sample_s": slots.seconds,
            "naive_s": naive.seconds,
        },
        "generations": {
            "naive_sample": naive.result["generations"],
            "pipeline_sample": floor_sample.result["generations"],
        },
        "floor_same_summaries": {
            "slots": slots.result["same_as_pipeline"],
            "slots_of": slots.result["generations"],
        },
        "floor_slots_over_floor": round(slots.seconds / floor_sample.seconds, 4),
        "scaling": scaling(by_documents, by_k),
        "dask_s": {str(w): s for w, s in dask.items()},
        "naive_hss": naive.result["hss"],
        "gate_estimate": gate_estimate(cold, n_main, others, n_sample),
    }


def scaling(by_documents: dict[int, float], by_k: dict[int, float]) -> dict[str, Any]:
    """Cold seconds over documents and over K, each with its linear fit."""
    return {
        "documents": {str(n): s for n, s in sorted(by_documents.items())},
        "documents_fit": linear_fit(list(by_documents), list(by_documents.values())),
        "k": {str(kk): s for kk, s in sorted(by_k.items())},
        "k_fit": linear_fit(list(by_k), list(by_k.values())),
    }


def gate_record(decision: dict[str, Any]) -> dict[str, Any]:
    """What a timed gate decided, on how many documents, and what it generated."""
    sequential = decision["metrics"].get("sequential", {})
    production = decision["metrics"].get("production", {})
    return {
        "candidate": decision.get("candidate"),
        "decision": decision["decision"],
        "decided_by": decision.get("decided_by", []),
        "documents_used": sequential.get("documents_used"),
        "documents_available": sequential.get("documents_available"),
        "looks": len(sequential.get("looks", [])),
        "production_restored": production.get("restored"),
        "production_summaries_generated": production.get("summaries_generated"),
        "candidate_summaries_generated": production.get("candidate_summaries_generated"),
    }


def gate_estimate(
    candidate: Measured, n: int, others: dict[str, Measured], n_sample: int
) -> dict[str, Any]:
    """The cold gate's time on n documents: the candidate's measured cold run plus each other
    model's floor on the sample scaled to n documents (an estimate, not a run)."""
    others_s = {uri: m.seconds * n / n_sample for uri, m in others.items()}
    return {
        "documents": n,
        "candidate_cold_s": candidate.seconds,
        "other_models_floor_s": {u: round(s, 1) for u, s in others_s.items()},
        "estimated_s": round(candidate.seconds + sum(others_s.values()), 1),
        "target_s": 900,
    }


def write_figures(bench: dict[str, Any], folder: Path) -> None:
    """Cost against documents and against K (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    for key, label, name in (
        ("documents", "documents", "cost_vs_documents.png"),
        ("k", "perturbations per strength (K)", "cost_vs_k.png"),
    ):
        points = {int(x): y for x, y in bench["scaling"][key].items()}
        fit = bench["scaling"][f"{key}_fit"]
        if fit is None:  # one point: nothing to draw a cost curve from
            continue
        xs = sorted(points)
        fig, ax = plt.subplots(figsize=(5, 3.4))
        ax.plot(xs, [points[x] for x in xs], "o", label="measured (cold hss score)")
        ax.plot(
            xs,
            [fit["intercept_s"] + fit["slope_s"] * x for x in xs],
            "-",
            label=f"linear fit, R² = {fit['r2']:.3f}",
        )
        ax.set_xlabel(label)
        ax.set_ylabel("seconds")
        ax.set_title(f"{bench['plan']['model']}: cost against {label}", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / name, dpi=110)
        plt.close(fig)


def markdown(bench: dict[str, Any]) -> str:
    """The ratios against their targets and the absolute times, as Markdown."""
    targets = {
        "floor_ratio": ("<=", 1.05),
        "speedup_vs_naive": (">=", 4.0),
        "warm_over_cold": ("<=", 0.05),
        "shap_eval_fraction": ("<=", 0.2),
        "shap_spearman_vs_default": (">=", 0.9),
        "attribution_s_per_document": ("<=", 30.0),
        "attribution_s_per_evaluation": ("<=", TARGET_S_PER_EVALUATION),
    }
    lines = [
        f"# hss bench: {bench['plan']['model']}, {bench['documents']} documents",
        "",
        f"{bench['created']} on {bench['machine']['cpu']} ({bench['machine']['cores']} cores)",
        "",
        "| ratio | measured | target | met |",
        "|---|---|---|---|",
    ]
    for key, (op, target) in targets.items():
        value = bench.get(key)  # older bench.json files lack the newer ratios
        if value is None:
            lines.append(f"| {key} | not measured | {op} {target} | - |")
            continue
        met = value <= target if op == "<=" else value >= target
        lines.append(f"| {key} | {value:.3f} | {op} {target} | {'yes' if met else 'no'} |")
    gate = bench.get("gate_estimate")
    if gate and gate["other_models_floor_s"]:
        met = gate["estimated_s"] <= gate["target_s"]
        lines.append(
            f"| gate with {1 + len(gate['other_models_floor_s'])} models, {gate['documents']} "
            f"documents (estimate) | {gate['estimated_s']:.0f} s | <= {gate['target_s']} s "
            f"| {'yes' if met else 'no'} |"
        )
    for candidate, runs in bench.get("gate_cold", {}).items():
        target = 600  # a Qwen-0.5B-size candidate within 10 minutes (issue 35)
        for kind, run in runs.items():
            lines.append(
                f"| cold gate, {candidate}, {kind}: {run['decision']} on "
                f"{run['documents_used']} of {run['documents_available']} documents "
                f"| {run['seconds']:.0f} s | <= {target} s | "
                f"{'yes' if run['seconds'] <= target else 'no'} |"
            )
    lines += attribution_lines(bench.get("shap"))
    lines += sentence_shap_lines(bench.get("sentence_shap"))
    lines += checker_lines(bench.get("checker"))
    if bench.get("quickstart_s") is not None:
        met = bench["quickstart_s"] <= 90
        lines.append(
            f"| make quickstart after setup | {bench['quickstart_s']:.0f} s | <= 90 s "
            f"| {'yes' if met else 'no'} |"
        )
    lengths = bench.get("production_lengths")
    if lengths:
        cut = lengths["all"]["cut_mid_sentence_share"]
        ratio = lengths["all"]["mean_over_asked"]
        lines.append(
            f"| production's reference summaries cut mid-sentence | {cut:.3f} | <= 0.1 "
            f"| {'yes' if cut <= 0.1 else 'no'} |"
        )
        lines.append(
            f"| production's reference summaries: mean words / words asked | {ratio:.2f} "
            f"| <= 1.5 | {'yes' if ratio <= 1.5 else 'no'} |"
        )
    lines += ["", "| step | seconds | peak MiB |", "|---|---|---|"]
    lines += [
        f"| {name} | {seconds:.1f} | {bench['peak_rss_mb'][name]:.0f} |"
        for name, seconds in bench["steps_s"].items()
    ]
    generation = bench.get("generation")
    if generation and "skipped" not in generation:
        lines += generation_markdown(generation, lengths)
    return "\n".join(lines) + "\n"


def checker_lines(checker: dict[str, Any] | None) -> list[str]:
    """The consistency checker's seconds per (document, summary) pair, amortized (its load and
    the cold pairs over all pairs), against the 1 s target, as a row of the ratio table (none
    for a bench.json from before the checker was timed)."""
    if checker is None:
        return []
    target = checker.get("target_s_per_pair", 0.3)
    name = f"checker {checker.get('model', '')} per (document, summary) pair"
    if "skipped" in checker:
        return [f"| {name} | not measured ({checker['skipped']}) | <= {target:g} s | - |"]
    amortized = checker["amortized_s_per_pair"]
    cold = "-" if checker["cold_s_per_pair"] is None else f"{checker['cold_s_per_pair']:.3f} s"
    if checker.get("cold_cpu_s_per_pair") is not None:  # absent before CPU time was recorded
        cold += f" (CPU {checker['cold_cpu_s_per_pair']:.3f} s)"
    return [
        f"| {name}, amortized over {checker['pairs']} pairs, "
        f"{checker['mean_source_words']:.0f}-word sources (load {checker['load_s']:.1f} s, "
        f"cold {cold}, warm {checker['warm_s_per_pair']:.3f} s) "
        f"| {amortized:.3f} s | <= {target:g} s | {'yes' if amortized <= target else 'no'} |"
    ]


def sentence_shap_lines(result: dict[str, Any] | None) -> list[str]:
    """Sentence-level attribution against its 10x Kernel SHAP reference as rows of the ratio
    table: the headline method's median and worst Spearman, evaluation fraction and seconds per
    explanation, then every other (method, budget) of the curve (none for a bench.json from
    before the step existed)."""
    if result is None:
        return []
    name = "sentence SHAP vs 10x reference"
    method = result.get("settings", {}).get("methods", ["permutation"])[0]
    name += f" ({method})"
    if "skipped" in result:
        return [f"| {name} | not measured ({result['skipped']}) | >= 0.9 | - |"]
    docs = f"{result['documents']} documents"
    self_rho = result.get("reference_self_spearman")
    self_text = "not measured" if self_rho is None else f"{self_rho:.3f}"
    fraction, seconds = result["eval_fraction"], result["seconds_per_document"]
    median, worst = result["spearman_median"], result["spearman_worst"]
    floor = result.get("noise_floor") or {}
    floor_text = f", instability noise floor {floor['rank']:.3f}" if "rank" in floor else ""
    lines = [
        f"| {name}: Spearman median, {docs} (reference self-Spearman {self_text}{floor_text}) "
        f"| {median:.3f} | >= 0.9 | {'yes' if median >= 0.9 else 'no'} |",
        f"| {name}: Spearman worst | {worst:.3f} | >= 0.9 | {'yes' if worst >= 0.9 else 'no'} |",
        f"| {name}: evaluation fraction | {fraction:.3f} | <= 0.2 "
        f"| {'yes' if fraction <= 0.2 else 'no'} |",
        f"| {name}: seconds per explanation | {seconds:.1f} | <= 30.0 "
        f"| {'yes' if seconds <= 30 else 'no'} |",
    ]
    main_budget = result.get("settings", {}).get("per_sentence", [2.0])[0]
    headline = f"{method}@{main_budget:g}xM"
    for key, row in result.get("curve", {}).items():
        if key == headline:
            continue  # the rows above
        lines.append(
            f"| sentence {key}: Spearman median / worst, evaluation fraction "
            f"{row['eval_fraction']:.3f}, {row['seconds_per_document']:.1f} s "
            f"| {row['spearman_median']:.3f} / {row['spearman_worst']:.3f} | >= 0.9 "
            f"| {'yes' if row['spearman_median'] >= 0.9 else 'no'} |"
        )
    return lines
