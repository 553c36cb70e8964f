"""A command agent for the A/B tests: reads its variant from its own environment.

Run as ``python ab_cmd_agent.py``; posts one chat completion whose system
message is a JSON object naming ``$AB_AGENT_TAG``, the case and the attempt.
"""

from __future__ import annotations

import json
import os
import urllib.request


def main() -> int:
    facts = {
        "variant": os.environ.get("AB_AGENT_TAG", ""),
        "case": os.environ["EVALTAPE_CASE_ID"],
        "attempt": int(os.environ["EVALTAPE_ATTEMPT"]),
        "turn": 0,
    }
    body = {
        "model": os.environ["EVALTAPE_MODEL"],
        "messages": [
            {"role": "system", "content": json.dumps(facts, sort_keys=True)},
            {"role": "user", "content": os.environ["EVALTAPE_PROMPT"]},
        ],
    }
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        data = json.loads(response.read())
    reply = data["choices"][0]["message"]["content"]
    with open("reply.txt", "w", encoding="utf-8") as handle:
        handle.write(reply)
    print(reply)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
