#!/usr/bin/env bash
# Create ./.venv from the hashed lock, install hss-gate and the embedded offline models.
# Idempotent: a second run only checks. CPU-only torch comes from PIP_FIND_LINKS when the
# machine provides a local wheel there, otherwise from the PyTorch CPU index.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! command -v uv >/dev/null 2>&1; then
  echo "== installing uv (version and hashes from requirements.lock)"
  uv_req="$(mktemp)"
  # the lock's uv entry: from "uv==" to the first line that does not continue with a backslash
  awk '/^uv==/{on=1} on{print} on && !/\\$/{exit}' requirements.lock > "$uv_req"
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
    -r "$uv_req"
  rm -f "$uv_req"
fi
UV="$(command -v uv || echo "$PYTHON -m uv")"

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  $UV venv --quiet --python "$PYTHON" .venv
fi

torch_source=()
if [ -n "${PIP_FIND_LINKS:-}" ]; then
  torch_source=(--find-links "$PIP_FIND_LINKS")
else
  torch_source=(--extra-index-url "https://download.pytorch.org/whl/cpu" --index-strategy unsafe-best-match)
fi

echo "== installing the locked dependencies (requirements.lock, hash-checked)"
# --compile-bytecode: without .pyc files every process recompiles torch, transformers, GX...
# (6-25 s per process; PYTHONDONTWRITEBYTECODE machines never cache them)
$UV pip install --quiet --python .venv/bin/python --require-hashes --compile-bytecode \
  "${torch_source[@]}" -r requirements.lock
$UV pip install --quiet --python .venv/bin/python --no-deps --no-build-isolation -e .

echo "== installing and verifying the embedded models"
.venv/bin/hss models install
