#!/usr/bin/env bash
# The steps of the hss-gate GitHub Action (action.yml), one subcommand each, so that a test runs
# exactly what the action runs:
#   action.sh key      the models cache: its folder and its key (the model lock's hash)
#   action.sh install  a virtual environment with hss-gate (from the action's folder or a wheel)
#                      and the embedded models, sha256-verified
#   action.sh run      validate the inputs, restore the baseline (dvc pull when a remote is set),
#                      run `hss gate`, record the exit code and the decision, write the summary
#   action.sh verdict  fail unless the gate promoted (exit 0 promote, 1 block, 2 anything else)
# Inputs come from the environment only (never from ${{ }} inside a script): INPUT_CANDIDATE,
# INPUT_PRODUCTION, INPUT_CORPUS, INPUT_PARAMS, INPUT_LIMIT, INPUT_K, INPUT_CANDIDATE_CONFIG, INPUT_OUT,
# and for a person's override of a block LABELS, PR_BODY, SENDER. Settings of the script itself:
#   HSS_ACTION_PATH   the action's folder (default: this script's parent folder)
#   HSS_VENV          the environment made by install and used by run (default:
#                     $RUNNER_TEMP/hss-gate-venv, else ./.hss-gate-venv)
#   HSS_INSTALL_FROM  what to install (default: HSS_ACTION_PATH; a .whl file works too)
#   HSS_INSTALL_MODE  locked (default: requirements.lock, hash-checked, then hss-gate without
#                     dependencies) or offline (a venv over this Python's site packages, then
#                     `pip install --no-deps --no-index`: tests, air-gapped runners)
#   HSS_MODELS        install (default) or skip (the models are there already)
#   GATE_EXIT         verdict: the exit code run recorded
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ACTION_PATH="${HSS_ACTION_PATH:-$(dirname "$here")}"
VENV="${HSS_VENV:-${RUNNER_TEMP:-$PWD}/hss-gate-venv}"
OUT="${INPUT_OUT:-outputs/gate}"
out_file="${GITHUB_OUTPUT:-/dev/null}"
summary_file="${GITHUB_STEP_SUMMARY:-/dev/null}"

models_dir() {
  # outside a project hss keeps the assembled models here (settings.user_cache_dir); the action
  # names it explicitly so that the cache step and hss agree inside a project too
  echo "${HSS_RUN__MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hss-gate/models}"
}

cmd_key() {
  local lock
  lock="$(cat "$ACTION_PATH/hss_gate/models/model_store.py" "$ACTION_PATH/requirements.lock" 2>/dev/null \
    | sha256sum | cut -c1-16)"
  {
    echo "key=hss-gate-models-$(uname -s)-$lock"
    echo "models-dir=$(models_dir)"
  } >> "$out_file"
  echo "models cache: $(models_dir), key hss-gate-models-$(uname -s)-$lock"
}

cmd_install() {
  local python="${PYTHON:-python3}" from="${HSS_INSTALL_FROM:-$ACTION_PATH}"
  local started=$SECONDS
  case "${HSS_INSTALL_MODE:-locked}" in
    offline)
      "$python" -m venv --system-site-packages "$VENV"
      # a venv made by a venv's Python sees the base Python's packages, not that venv's: when
      # this Python is a venv, its packages are added too (after the new venv's own)
      local parent_site venv_site
      parent_site="$("$python" -c 'import sys, sysconfig
print(sysconfig.get_paths()["purelib"] if sys.prefix != sys.base_prefix else "")')"
      if [ -n "$parent_site" ]; then
        venv_site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        echo "import site; site.addsitedir('$parent_site')" > "$venv_site/_hss_gate_parent.pth"
      fi
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-index \
        "$from"
      ;;
    locked)
      "$python" -m venv "$VENV"
      # uv at the lock's version and hashes: from "uv==" to the first line not continued by "\"
      awk '/^uv==/{on=1} on{print} on && !/\\$/{exit}' "$ACTION_PATH/requirements.lock" \
        > "$VENV/uv-requirement.txt"
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
        --no-deps -r "$VENV/uv-requirement.txt"
      "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --require-hashes \
        --compile-bytecode --extra-index-url "https://download.pytorch.org/whl/cpu" \
        --index-strategy unsafe-best-match -r "$ACTION_PATH/requirements.lock"
      "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" --no-deps \
        --no-build-isolation "$from"
      ;;
    *)
      echo "::error::HSS_INSTALL_MODE must be locked or offline"
      exit 2
      ;;
  esac
  echo "installed hss-gate $("$VENV/bin/hss" version) into $VENV in $((SECONDS - started)) s"
  if [ "${HSS_MODELS:-install}" = install ]; then
    HSS_RUN__MODELS_DIR="$(models_dir)" "$VENV/bin/hss" models install
  fi
  echo "venv=$VENV" >> "$out_file"
}

restore_baseline() {
  # A team that keeps its baseline in a DVC remote gets it pulled; otherwise (and when the pull
  # fails, e.g. no credentials on a fork) the committed baseline is used.
  local dvc="$VENV/bin/dvc"
  if [ -d .dvc ] && [ -x "$dvc" ] && [ -n "$("$dvc" remote list 2>/dev/null)" ]; then
    if ! "$dvc" pull; then
      echo "::warning::dvc pull failed: using the baseline committed in the repository"
    fi
  fi
}

cmd_run() {
  local candidate="${INPUT_CANDIDATE:-}" limit="${INPUT_LIMIT:-}" code=0
  # One token, scheme:target, no whitespace or newlines; or none, when a candidate file (its
  # `uri`, read by hss gate) is given.
  if { [ -n "$candidate" ] || [ -z "${INPUT_CANDIDATE_CONFIG:-}" ]; } &&
    ! [[ "$candidate" =~ ^[a-z][a-z0-9]*:[^[:space:]]+$ ]]; then
    echo "::error::invalid or missing candidate model URI (expected scheme:target, e.g. extractive:lead-3)"
    echo "exit_code=2" >> "$out_file"
    return 0
  fi
  if { [ -n "$limit" ] && ! [[ "$limit" =~ ^[1-9][0-9]{0,5}$ ]]; } ||
    { [ -n "${INPUT_K:-}" ] && ! [[ "$INPUT_K" =~ ^[1-9][0-9]{0,5}$ ]]; }; then
    echo "::error::limit and k must be positive integers"
    echo "exit_code=2" >> "$out_file"
    return 0
  fi
  restore_baseline
  local args=(gate --out "$OUT" --junit "$OUT/junit.xml")
  [ -n "$candidate" ] && args+=("--candidate=$candidate")
  [ -n "${INPUT_PRODUCTION:-}" ] && args+=("--production=$INPUT_PRODUCTION")
  [ -n "${INPUT_CORPUS:-}" ] && args+=("--corpus=$INPUT_CORPUS")
  [ -n "${INPUT_PARAMS:-}" ] && [ "$INPUT_PARAMS" != params.yaml ] && args+=(--params "$INPUT_PARAMS")
  [ -n "${INPUT_CANDIDATE_CONFIG:-}" ] && args+=(--candidate-config "$INPUT_CANDIDATE_CONFIG")
  [ -n "$limit" ] && args+=(--limit "$limit")
  [ -n "${INPUT_K:-}" ] && args+=(-k "$INPUT_K")
  # A person's override of a block: the label hss-gate-override on the pull request and a line
  # "hss-gate override: <why>" in its description; recorded in decision.json with who and why.
  if [[ ",${LABELS:-}," == *",hss-gate-override,"* ]]; then
    local reason
    reason="$(printf '%s\n' "${PR_BODY:-}" | sed -n 's/^[[:space:]]*hss-gate override:[[:space:]]*//p' | head -n 1)"
    if [ -n "$reason" ]; then
      args+=(--override-by "${SENDER:-unknown}" --override-reason "$reason")
    else
      echo "::warning::label hss-gate-override without a 'hss-gate override: <why>' line: not applied"
    fi
  fi
  HSS_RUN__MODELS_DIR="$(models_dir)" "$VENV/bin/hss" "${args[@]}" || code=$?
  echo "exit_code=$code" >> "$out_file"
  local decision=error
  case "$code" in 0) decision=promote ;; 1) decision=block ;; esac
  echo "decision=$decision" >> "$out_file"
  if [ -f "$OUT/decision.md" ]; then
    cat "$OUT/decision.md" >> "$summary_file"
  else
    printf '## hss gate: no decision\n\nThe gate exited with %s: not promoted.\n' "$code" \
      >> "$summary_file"
  fi
  echo "hss gate exited with $code"
}

cmd_verdict() {
  case "${GATE_EXIT:-}" in
    0) echo "Gate decision: promote" ;;
    1) echo "::error::Gate decision: block (see decision.md in the gate report)"
       exit 1 ;;
    *) echo "::error::The gate could not decide (exit ${GATE_EXIT:-none}): not promoted"
       exit 2 ;;
  esac
}

case "${1:-}" in
  key) cmd_key ;;
  install) cmd_install ;;
  run) cmd_run ;;
  verdict) cmd_verdict ;;
  *) echo "usage: action.sh key|install|run|verdict" >&2; exit 2 ;;
esac
