#!/bin/sh
# An agent that is a curl call, run as a command:
#   agent = "cmd:sh curl_agent.sh {prompt}"
# It asks once and prints the raw JSON answer's text; jq-free on purpose.
set -eu
body=$(printf '{"model": "%s", "messages": [{"role": "user", "content": "%s"}]}' \
  "$EVALTAPE_MODEL" "$1")
curl -sS --fail-with-body "$OPENAI_BASE_URL/chat/completions" \
  -H "authorization: Bearer $OPENAI_API_KEY" \
  -H "content-type: application/json" \
  -d "$body" | python3 -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])'
