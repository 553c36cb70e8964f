"""A Python agent for the A/B tests whose behaviour comes from ``task.environ``.

``AB_AGENT_TURNS`` is how many chat completions it makes (a case with
``expectMaxTurns: 1`` fails at 2), ``AB_AGENT_TAG`` names the variant.  Each
request's system message is a JSON object naming the variant, the case, the
attempt and what ``os.environ`` holds for the tag, so a test can read the
order of attempts, and proof that the process environment was never changed,
from the server's request log.
"""

from __future__ import annotations

import json
import os

from evaltape.scoring import Task


def run(task: Task) -> str:
    tag = task.environ.get("AB_AGENT_TAG", "")
    turns = int(task.environ.get("AB_AGENT_TURNS", "1"))
    key = task.environ.get("OPENAI_API_KEY", "")
    reply = ""
    for turn in range(turns):
        facts = {
            "variant": tag,
            "case": task.case_id,
            "attempt": task.attempt,
            "turn": turn,
            "process_tag": os.environ.get("AB_AGENT_TAG"),
        }
        response = task.client.post(
            task.base_url.rstrip("/") + "/chat/completions",
            json={
                "model": task.model,
                "messages": [
                    {"role": "system", "content": json.dumps(facts, sort_keys=True)},
                    {"role": "user", "content": task.prompt},
                ],
            },
            headers={"authorization": f"Bearer {key}"} if key else {},
        )
        response.raise_for_status()
        reply = str(response.json()["choices"][0]["message"]["content"])
    (task.workspace / "reply.txt").write_text(reply, encoding="utf-8")
    return reply
