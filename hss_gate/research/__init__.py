"""The research wing: the paper's analysis, its comparators and the speed benchmark.

Only `hss experiment` and `hss bench` import it; nothing on the gate, monitor or baseline path
does (tests/unit/test_layout.py keeps it that way).

- experiment.py (statistics), experiment_run.py (the run), experiment_report.py (report.md/html);
- attribution.py (SHAP, LIME, attention), instability.py (attribution instability),
  likelihood.py (the attribution scorers: a test double, the evaluation cache, `load_scorer`;
  the model backends are the adapter hss_gate/models/likelihood.py), correlation.py;
- factuality_data.py: readers of the human-labelled factuality benchmarks;
- bench.py, bench_run.py: `hss bench` (BENCHMARKS.md).
"""
