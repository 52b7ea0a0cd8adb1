"""The workflows: the one definition of each job's steps, their order and fail-closed handling.

- score.py: score one model on a corpus (`hss score`);
- shared.py: the steps the workflows share (documents, model check, restored summaries,
  score frames, drift, table suites);
- baseline.py: the production baseline's three stages (`hss baseline`, `dvc repro`);
- gate.py: promote or block a candidate against production (`hss gate`), with its steps in
  gate_preparation.py (the request, the run prepared, production restored), gate_looks.py (both
  models scored look by look) and gate_explanation.py (the attribution step, on request);
- monitor.py: check live production traffic (`hss monitor`);
- monitor_windows.py: the monitor's current window against the model id's own reference window.

Each takes the model runner (steps.ModelRunner) and a progress reporter as parameters and runs
its steps through a `Steps` runner (steps.py): directly for the command line, as Prefect tasks
with retries on I/O for the flows in flows/. Nothing here imports hss_gate.research.
"""
