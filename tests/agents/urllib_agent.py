"""A command agent for the runner's tests: plain Python and urllib, no SDK.

Run as ``python urllib_agent.py PROMPT``; it posts one chat completion to
``$OPENAI_BASE_URL/chat/completions`` with the model in ``$EVALTAPE_MODEL``,
writes the reply to ``reply.txt`` in its working folder and prints it.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request


def main() -> int:
    prompt = sys.argv[1]
    body = {
        "model": os.environ["EVALTAPE_MODEL"],
        "messages": [{"role": "user", "content": prompt}],
    }
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", ""),
        },
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
    sys.exit(main())
