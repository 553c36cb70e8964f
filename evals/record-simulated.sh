#!/usr/bin/env bash
# Record the project's suites live against the simulated competent model
# (evals/sim/competent_model.py: a program on 127.0.0.1 that plays a good
# model for every case, see evals/sim/plans.py) and write the tapes into
# cassettes/simulated/.  Most of these attempts pass, so a harness bug that
# only changes what a tool does to files turns a recorded pass into a
# REGRESSION on replay.  No model, no internet, no key; it takes seconds.
#
#   evals/record-simulated.sh                    # every suite, 3 trials
#   TRIALS=1 CASES=fix- evals/record-simulated.sh
#   evals/record-simulated.sh --judge-model M --judge-base-url URL   # extra flags go to evaltape live
#
# With --update-cassettes (added when evaltape has it) a new recording replaces the
# session of the same case, model and attempt, so the set never grows.
# Environment: TRIALS (3), CASES (case-id prefix, default all), PORT (8766),
# SEED (7), EVALTAPE (default .venv/bin/evaltape), PYTHON (default .venv/bin/python),
# CASSETTES (cassettes/simulated).
set -euo pipefail
cd "$(dirname "$0")/.."

TRIALS=${TRIALS:-3}
PORT=${PORT:-8766}
SEED=${SEED:-7}
EVALTAPE=${EVALTAPE:-.venv/bin/evaltape}
PYTHON=${PYTHON:-.venv/bin/python}
CASSETTES=${CASSETTES:-cassettes/simulated}
MODEL=simulated-competent
PROGRAM=evals/sim/competent_model.py

say() { printf 'record-simulated: %s\n' "$*" >&2; }

LOG=$(mktemp)
"$PYTHON" "$PROGRAM" --port "$PORT" >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$LOG" && break
  kill -0 "$SERVER" 2>/dev/null || { say "the simulated model exited:"; cat "$LOG" >&2; exit 1; }
  sleep 0.1
done
grep -q '^listening on ' "$LOG" || { say "the simulated model did not start in 10 s"; cat "$LOG" >&2; exit 1; }
say "simulated model ready on 127.0.0.1:$PORT"

args=(live -m "$MODEL" --trials "$TRIALS" --concurrency 2 --seed "$SEED"
      --agent evals.agent:run --base-url "http://127.0.0.1:$PORT/v1"
      --cassettes "$CASSETTES" --source simulated --source-detail "$PROGRAM")
# Newer evaltape writes into the cassettes folder only when asked to.
if "$EVALTAPE" live --help | grep -q -- '--update-cassettes'; then
  args+=(--update-cassettes)
fi
if [ -n "${CASES:-}" ]; then args+=(--cases "$CASES"); fi
args+=("$@")
# The plans are written for the reference agent's forced strategy.
EVALTAPE_AGENT_STRATEGY=forced OPENAI_API_KEY=${OPENAI_API_KEY:-local-no-key} "$EVALTAPE" "${args[@]}"
