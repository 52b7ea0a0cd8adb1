# hss-gate: the README's two commands are `make quickstart` and `make test`.
SHELL := /bin/bash
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
VENV := .venv/bin
MODEL ?= gguf:qwen2.5-coder-0.5b-instruct
CANDIDATE ?= gguf:smollm2-135m-instruct
OUT ?= outputs/score
QUICKSTART_OUT ?= outputs/quickstart

.PHONY: setup quickstart score baseline repro gate monitor experiment bench bench-quick bench-targets bench-attribution test test-unit test-fast lint

setup:
	bash scripts/setup.sh

quickstart: setup  # the main job: a small candidate gated against the restored production baseline
	@# exit 1 is a decision (blocked), not a failure of the quickstart; 2 (error) fails it
	$(VENV)/hss gate --candidate $(CANDIDATE) --out $(QUICKSTART_OUT) || [ $$? -eq 1 ]

score:
	$(VENV)/hss score --model $(MODEL) --out $(OUT)

baseline:
	$(VENV)/hss baseline

repro:  # rebuild the baselines that a change affects (dvc.yaml)
	PATH="$(CURDIR)/$(VENV):$$PATH" $(VENV)/dvc repro

gate:
	$(VENV)/hss gate --candidate $(CANDIDATE)

monitor:
	$(VENV)/hss monitor

experiment:  # the paper's analysis (params.yaml `experiment`): hours cold on 2 cores
	$(VENV)/hss experiment

BENCH_OUT ?= outputs/bench
bench:  # BENCHMARKS.md: the reference corpus, ~55 min on 2 cores
	$(VENV)/hss bench --out $(BENCH_OUT)

bench-quick:  # the same measurements on 2 documents, a cold gate and the quickstart: ~14 min
	$(VENV)/hss bench --quick --out $(BENCH_OUT)-quick

bench-targets:  # only the speed targets: floor_ratio on the corpus, the checker, the Qwen-size gate
	$(VENV)/hss bench --targets --out $(BENCH_OUT)-targets

bench-attribution:  # only sentence-level attribution's fidelity and cost on 10 documents: ~50 min
	$(VENV)/hss bench --attribution --out $(BENCH_OUT)-attribution

lint:
	$(VENV)/ruff check hss_gate tests flows scripts experiments
	$(VENV)/ruff format --check hss_gate tests flows scripts experiments

test: setup lint
	$(VENV)/python -m pytest -m "unit or integration or slow" -q

test-fast:
	$(VENV)/python -m pytest -m unit -q
