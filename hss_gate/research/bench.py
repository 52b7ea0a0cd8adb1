"""`hss bench`: where a scoring run's time goes, measured side by side in one run.

Every measurement is a separate process (fresh imports, its own cache directory), timed from
outside and with its peak memory from the kernel (wait4):

- floor: only the K+1 generations per document (model load included), through the engine as
  configured (one llama.cpp copy per core) and through llama.cpp's parallel slots;
- cold / warm: `hss score` with an empty cache, then again with the cache it filled;
- naive: the pipeline as first written: one generation call per input, the base summary
  regenerated for every perturbation, no cache, every stage loading its own models;
- scaling: cold runs over more documents and over more perturbations per strength (K);
- dask: the flows' Dask route with 1 and 2 local workers;
- shap: word-level attribution as the experiment runs it, its cost per evaluation and per
  document beside the model and summary length, and SHAP at our budget against shap's default
  budget for the same explainer (hss_gate.research.attribution_bench);
- gate_cold: `hss gate` on an empty cache, production restored from the versioned baseline,
  with sequential stopping (and, in the full plan, with `--full` too), for each candidate;
- quickstart: the README's `make quickstart` after setup (`make -o setup quickstart`);
- checker: the configured consistency checker on the production model's stored base summaries
  (one per reference document): its load, then seconds per (document, summary) pair with an
  empty cache and again with the cache it filled (hss_gate.research.checker_bench).

`python -m hss_gate.research.bench STAGE CONFIG.json RESULT.json` runs one in-process stage.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate.research.attribution_bench import shap_stage
from hss_gate.research.checker_bench import checker_stage

QUICK_MODEL = "gguf:smollm2-135m-instruct"


@dataclass
class BenchPlan:
    """What one bench run measures (document counts are the first N of the corpus; 0 = all)."""

    model: str = QUICK_MODEL
    documents: int = 0
    sample: int = 2  # naive, slots, dask, K scaling and the other models' floors (0 = none)
    scale_documents: list[int] = field(default_factory=lambda: [1])  # besides sample and all
    scale_k: list[int] = field(default_factory=lambda: [2, 3])  # besides params' K
    other_models: list[str] = field(default_factory=list)  # floor only, for the gate estimate
    shap_documents: int = 2  # whole documents explained (attribution cost and agreement; 0 = none)
    dask: bool = True
    # model URIs, or candidate configs (a .yaml file, as `hss gate --candidate-config` takes)
    gate_candidates: list[str] = field(default_factory=lambda: [QUICK_MODEL])
    gate_documents: int = 0  # the gate's corpus: the whole reference corpus (0) or first N
    gate_full: bool = False  # also every document, without sequential stopping
    quickstart: bool = True
    checker_documents: int = 48  # (document, production base summary) pairs timed (0 = none)
    # sentence-level attribution's fidelity (hss_gate.research.sentence_fidelity): documents,
    # budgets per sentence (the first is the main one), the reference's factor, the documents
    # whose reference is run twice, the longest document taken (0 = any)
    sentence_shap_documents: int = 10  # 0 = none
    sentence_shap_per_sentence: list[float] = field(default_factory=lambda: [2.0, 1.0, 4.0])
    sentence_shap_reference_factor: float = 10.0
    sentence_shap_self_documents: int = 10
    sentence_shap_max_sentences: int = 0
    sentence_shap_methods: list[str] = field(default_factory=lambda: ["permutation", "kernel"])
    # llama.cpp's prefill/decode split, plain / prefix reuse / ngram speculation, per GGUF
    # model, on the first N documents' texts (hss_gate.research.generation_bench; [] = none)
    generation_models: list[str] = field(default_factory=list)
    generation_documents: int = 3


QUICK = BenchPlan(
    documents=2,
    sample=1,
    scale_documents=[1],
    scale_k=[2],
    shap_documents=1,
    dask=False,
    sentence_shap_documents=1,
    sentence_shap_per_sentence=[2.0],
    sentence_shap_self_documents=0,
    sentence_shap_max_sentences=12,
    sentence_shap_methods=["permutation"],
)
QWEN_SIZE_CANDIDATE = "docs/evidence/candidate-own-words.yaml"  # Qwen 0.5B, its own prompt
GGUF_MODELS = ["gguf:qwen2.5-coder-0.5b-instruct", QUICK_MODEL, "gguf:gemma3-270m"]
FULL = BenchPlan(
    other_models=["gguf:qwen2.5-coder-0.5b-instruct"],
    gate_candidates=[QUICK_MODEL, "gguf:gemma3-270m", QWEN_SIZE_CANDIDATE],
    gate_full=True,
    generation_models=GGUF_MODELS,
)
# The speed targets alone (48.5 min on 2 idle cores, 2026-12-03): floor_ratio on the whole
# corpus (cold, warm and the generation floor), the checker's cost, the Qwen-size candidate's
# cold gate and the generation section (prefill/decode, prefix reuse, speculation, identical
# summaries).
TARGETS = BenchPlan(
    generation_models=GGUF_MODELS,
    sample=0,
    shap_documents=0,
    dask=False,
    gate_candidates=[QWEN_SIZE_CANDIDATE],
    quickstart=False,
    sentence_shap_documents=0,
)
# Sentence-level attribution alone (issue 26): fidelity of permutation SHAP (at 2 x M and 1 x M
# evaluations) and LIME against a Kernel SHAP reference at 10x the main budget on the first 10
# documents, the reference's seed-to-seed agreement on 3, the instability noise floor and seconds
# per document. The pipeline steps run on 1 document only (bench.json's ratios need them).
ATTRIBUTION = BenchPlan(
    documents=1,
    sample=0,
    shap_documents=0,
    dask=False,
    gate_candidates=[],
    quickstart=False,
    checker_documents=0,
    sentence_shap_per_sentence=[2.0, 1.0],
    sentence_shap_self_documents=3,
    sentence_shap_methods=["permutation", "lime"],
)


def plan_for(
    quick: bool,
    model: str | None = None,
    documents: int | None = None,
    quickstart: bool = True,
    targets: bool = False,
    attribution: bool = False,
) -> BenchPlan:
    """The quick, full or targets plan, for another model or number of documents if given
    (the gate then runs that model on those documents)."""
    from dataclasses import replace

    from hss_gate.common.errors import InputError

    if documents is not None and documents < 1:
        raise InputError("--documents must be at least 1")
    if quick + targets + attribution > 1:
        raise InputError("--quick, --targets and --attribution are different plans: choose one")
    plan = ATTRIBUTION if attribution else TARGETS if targets else QUICK if quick else FULL
    return replace(
        plan,
        model=model or plan.model,
        documents=plan.documents if documents is None else documents,
        gate_candidates=[model] if model else plan.gate_candidates,
        gate_documents=plan.gate_documents if documents is None else documents,
        quickstart=quickstart and plan.quickstart,
    )


@dataclass
class Measured:
    """One timed process."""

    seconds: float
    peak_rss_mb: float
    result: dict[str, Any]


# --------------------------------------------------------------------------- pure summaries


def linear_fit(x: Sequence[float], y: Sequence[float]) -> dict[str, float] | None:
    """Least-squares y = intercept + slope x, with R^2 (1.0 for two points; None for one)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(set(xs.tolist())) < 2:
        return None
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = ys - (intercept + slope * xs)
    total = float(np.sum((ys - ys.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
    return {"intercept_s": float(intercept), "slope_s": float(slope), "r2": r2}


def ratios(times: dict[str, float | None], shap: dict[str, Any]) -> dict[str, float | None]:
    """The headline ratios of bench.json from the measured times (None for a skipped step)."""
    explained = "ours" in shap
    naive, cold_sample = times.get("naive_s"), times.get("cold_sample_s")
    return {
        "floor_ratio": times["cold_s"] / times["floor_s"],
        "speedup_vs_naive": naive / cold_sample if naive and cold_sample else None,
        "warm_over_cold": times["warm_s"] / times["cold_s"],
        "shap_eval_fraction": shap["ours"]["evaluations"] / shap["default"]["evaluations"]
        if explained
        else None,
        "shap_spearman_vs_default": shap["spearman"] if explained else None,
        "attribution_s_per_document": shap["seconds_per_document"] if explained else None,
        # absent from a bench.json before issue 47
        "attribution_s_per_evaluation": shap.get("seconds_per_evaluation") if explained else None,
    }


def machine() -> dict[str, Any]:
    """CPU, cores, memory and versions of the machine the bench ran on."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration, ValueError):
        mem_kb = 0
    from hss_gate import __version__

    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "hss_gate": __version__,
    }


# --------------------------------------------------------------------------- processes


def run_timed(
    cmd: Sequence[str],
    env: dict[str, str],
    result: Path | None = None,
    say: Callable[[str], None] = lambda line: None,
    name: str = "step",
    cwd: Path | None = None,
    exit_codes: tuple[int, ...] = (0,),
) -> Measured:
    """Run a command; its wall time, peak RSS (kernel accounting) and JSON result file. The
    command's own progress lines are passed to `say` as they come; an exit code outside
    `exit_codes` fails the step."""
    import threading

    from hss_gate.common.progress import PREFIX

    started = time.perf_counter()
    lines: list[bytes] = []
    quiet = threading.Event()  # set when the step ends

    def heartbeat() -> None:  # a step that prints no progress of its own still shows it runs
        while not quiet.wait(30):
            say(f"  {PREFIX} {name} running, {time.perf_counter() - started:.0f} s")

    with subprocess.Popen(
        list(cmd),
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as proc:
        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        try:
            for line in proc.stdout or []:
                lines.append(line)
                text = line.decode(errors="replace").rstrip()
                if text.startswith(PREFIX):
                    say(f"  {text}")
        finally:
            quiet.set()
        output = b"".join(lines)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if proc.returncode not in exit_codes:
        from hss_gate.common.errors import HssError

        tail = output.decode(errors="replace").strip().splitlines()[-15:]
        raise HssError(f"bench step failed ({' '.join(cmd[:4])} ...):\n" + "\n".join(tail))
    data = json.loads(result.read_text()) if result is not None and result.exists() else {}
    return Measured(round(seconds, 2), round(usage.ru_maxrss / 1024, 1), data)


def write_subset(corpus: Sequence[Any], n: int, path: Path) -> Path:
    """The first n documents (0 = all) as a JSONL corpus."""
    docs = corpus[:n] if n else corpus
    path.write_text("".join(d.model_dump_json() + "\n" for d in docs))
    return path


# --------------------------------------------------------------------------- in-process stages


def _stage_settings(config: dict[str, Any]) -> Any:
    from hss_gate.settings import load_settings

    return load_settings(config["params"], run__cache_dir=config["cache"])


def _texts(docs: Sequence[Any], settings: Any, cache_dir: str | None) -> list[str]:
    """Every original and perturbed text (unique), perturbations from the given cache."""
    from hss_gate.common.cache import Cache
    from hss_gate.scoring.pipeline import make_perturbations
    from hss_gate.scoring.toolkit import real_toolkit

    cache = Cache(cache_dir)
    try:
        made = make_perturbations(docs, settings, real_toolkit(settings), cache)
    finally:
        cache.close()
    texts = [t for d in docs for t in (d.text, *(p.text for p in made[d.doc_id]))]
    return list(dict.fromkeys(texts))


def floor_stage(config: dict[str, Any]) -> dict[str, Any]:
    """Only the generations (model load included), compared with the pipeline's summaries."""
    from hss_gate.common.cache import Cache
    from hss_gate.common.inputs import load_corpus
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.scoring.generation import summary_key

    settings = _stage_settings(config)
    texts = _texts(load_corpus(config["corpus"]), settings, config["cache"])
    started = time.perf_counter()
    summarizer = load_summarizer(config["model"], settings)
    summaries = summarizer.summarize(texts)
    seconds = time.perf_counter() - started
    reference = config.get("reference_cache")
    same = None
    if reference:
        cache = Cache(reference)
        fingerprint = config.get("reference_fingerprint") or summarizer.fingerprint
        stored = cache.get_many("summaries", [summary_key(fingerprint, t) for t in texts])
        cache.close()
        same = sum(
            stored.get(summary_key(fingerprint, t), b"").decode() == s
            for t, s in zip(texts, summaries, strict=True)
        )
    return {
        "seconds": seconds,
        "generations": len(texts),
        "fingerprint": summarizer.fingerprint,
        "same_as_pipeline": same,
    }


def naive_stage(config: dict[str, Any]) -> dict[str, Any]:
    """The pipeline as first written (see the module docstring); HSS per document."""
    from hss_gate.common.cache import Cache
    from hss_gate.common.inputs import load_corpus, load_normalization
    from hss_gate.models.embedding import SbertEmbedder
    from hss_gate.models.language import SpacyTagger
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.scoring.distance import wasserstein
    from hss_gate.scoring.pipeline import make_perturbations
    from hss_gate.scoring.severity import severity
    from hss_gate.scoring.toolkit import real_toolkit
    from hss_gate.text.sentences import split_sentences
    from hss_gate.text.swap_back import swap_back

    settings = _stage_settings(config)
    settings = settings.model_copy(
        update={"generate": settings.generate.model_copy(update={"workers": 1})}
    )
    aware = settings.score.perturbation_aware
    docs = load_corpus(config["corpus"])
    started = time.perf_counter()
    perturbations = make_perturbations(docs, settings, real_toolkit(settings), Cache(None))
    summarizer = load_summarizer(config["model"], settings)
    pairs, generations = [], 0
    for doc in docs:
        for p in perturbations[doc.doc_id]:
            base = summarizer.summarize([doc.text])[0]
            perturbed = summarizer.summarize([p.text])[0]
            generations += 2
            pairs.append((doc, base, swap_back(perturbed, p.swaps, doc.text), perturbed))
    del summarizer
    embedder = SbertEmbedder(settings.score.embedder)

    def cloud(summary: str) -> np.ndarray:
        return np.asarray(embedder.encode(split_sentences(summary) or [""]))

    distances: dict[str, list[float]] = {}
    for doc, base, restored, perturbed in pairs:
        other = cloud(restored if aware else perturbed)
        distances.setdefault(doc.doc_id, []).append(wasserstein(cloud(base), other))
    tagger = SpacyTagger()
    for _, _, _, perturbed in pairs:
        tagger.mentions([perturbed])
    normalization = load_normalization(settings.score.normalization)
    hss = {
        doc.doc_id: severity(
            distances[doc.doc_id],
            normalization.constant(doc.category, settings.score.variant)[0],
        )
        for doc in docs
    }
    return {"seconds": time.perf_counter() - started, "generations": generations, "hss": hss}


def sentence_shap_stage(config: dict[str, Any]) -> dict[str, Any]:
    """Sentence-level attribution's fidelity (sentence_fidelity.measure_fidelity): on the first
    `documents` documents (with at most `max_sentences` sentences, 0 = any), each of `methods`
    (the first is the headline; it alone runs at every budget) against a Kernel SHAP reference
    at `reference_factor` x the largest budget (its own seed, no shared evaluation; exact
    Shapley values when 2^M fits), the reference's seed-to-seed Spearman on the first
    `self_documents`, the noise floor of instability, seconds per document. Skipped for models
    without token probabilities."""
    from hss_gate.common.errors import ModelError
    from hss_gate.common.inputs import load_corpus
    from hss_gate.common.progress import PREFIX
    from hss_gate.models.summarizers import load_summarizer
    from hss_gate.research.likelihood import load_scorer
    from hss_gate.research.sentence_fidelity import measure_fidelity
    from hss_gate.text.masked_text import sentence_features

    settings = _stage_settings(config)
    exp = settings.experiment
    try:
        scorer = load_scorer(
            config["model"], settings, exp.attribution_backend, exp.attribution_dtype
        )
    except ModelError as exc:
        return {"skipped": str(exc)}
    longest = config.get("max_sentences", 0)
    docs = [
        d
        for d in load_corpus(config["corpus"])
        if not longest or sentence_features(d.text).n <= longest
    ][: config.get("documents", 1)]
    summaries = load_summarizer(config["model"], settings).summarize([d.text for d in docs])
    result = measure_fidelity(
        scorer,
        [(d.doc_id, d.text, s) for d, s in zip(docs, summaries, strict=True)],
        config.get("per_sentence", [2.0]),
        config.get("reference_factor", 10.0),
        config.get("methods", ["permutation"]),
        config.get("self_documents", 0),
        settings.perturb.seed,
        settings.generate.max_input_words,
        say=lambda line: print(f"{PREFIX} sentence_shap {line.strip()}", flush=True),
    )
    return {"model": config["model"], "max_sentences": longest, **result}


def generation_stage(config: dict[str, Any]) -> dict[str, Any]:
    """llama.cpp's prefill/decode split with and without prefix reuse and speculation."""
    from hss_gate.research.generation_bench import generation_stage as stage

    return stage(config)


STAGES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "floor": floor_stage,
    "naive": naive_stage,
    "shap": shap_stage,
    "sentence_shap": sentence_shap_stage,
    "checker": checker_stage,
    "generation": generation_stage,
}


def main(argv: Sequence[str] | None = None) -> None:
    """Run one in-process stage: STAGE CONFIG.json RESULT.json."""
    stage, config_path, result_path = argv or sys.argv[1:]
    result = STAGES[stage](json.loads(Path(config_path).read_text()))
    Path(result_path).write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
