#!/usr/bin/env bash
# A live smoke for CI: record a few cases with one trial against the real
# local model (see evals/record.sh), then replay them offline.  The replay
# must find every verdict unchanged: the harness recorded them seconds ago,
# so any difference is nondeterminism in the harness itself.
#
#   evals/live-smoke.sh            # cases whose id starts with "read-"
#   CASES=answer- evals/live-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

EVALTAPE=${EVALTAPE:-.venv/bin/evaltape}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

say() { printf 'live-smoke: %s\n' "$*" >&2; }

say "recording cases '${CASES:-read-}' live, one trial each"
CASSETTES="$WORK/cassettes" TRIALS=1 CASES="${CASES:-read-}" EVALTAPE="$EVALTAPE" \
  timeout 1800 bash evals/record.sh --results "$WORK/results"
count=$(find "$WORK/cassettes" -name '*.tape' | wc -l)
[ "$count" -gt 0 ] || { say "FAILED: no tape was recorded"; exit 1; }
say "replaying $count tape(s) offline"
"$EVALTAPE" replay --cassettes "$WORK/cassettes" --results "$WORK/results" --cases "${CASES:-read-}"
