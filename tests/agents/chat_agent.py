"""A minimal Python agent for the runner's tests: one chat completion through ``task.client``.

``CHAT_AGENT_VARIANT`` changes its behaviour the way a harness edit would:
``changed_request`` sends a different system prompt (a replay sees a new
request), ``fail_after`` raises after the model answered.
``CHAT_AGENT_UNLUCKY=<case id>`` fails that case's first three attempts (the
planned trials of a gate) and passes the rest, as a healthy case that had a
bad run would.  ``CHAT_AGENT_BROKEN=<case id>`` fails every attempt of that case,
as a harness change that broke one case would.
"""

from __future__ import annotations

import os

from evaltape.scoring import Task

SYSTEM = "You are a test agent. Answer briefly."


def run(task: Task) -> str:
    variant = os.environ.get("CHAT_AGENT_VARIANT", "")
    system = SYSTEM + (" Also be polite." if variant == "changed_request" else "")
    body: dict[str, object] = {
        "model": task.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": task.prompt},
        ],
    }
    if task.seed is not None:
        body["seed"] = task.seed
    key = os.environ.get("OPENAI_API_KEY", "")
    response = task.client.post(
        task.base_url.rstrip("/") + "/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {key}"} if key else {},
    )
    response.raise_for_status()
    data = response.json()
    task.log("turn", status=response.status_code)
    if variant == "fail_after":
        raise RuntimeError("the harness broke after the model answered")
    if os.environ.get("CHAT_AGENT_BROKEN") == task.case_id:
        raise RuntimeError("this case is broken")
    if os.environ.get("CHAT_AGENT_UNLUCKY") == task.case_id and task.attempt < 3:
        raise RuntimeError("an unlucky attempt")
    reply = str(data["choices"][0]["message"]["content"])
    (task.workspace / "reply.txt").write_text(reply, encoding="utf-8")
    return reply
