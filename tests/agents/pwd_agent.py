"""A Python agent whose tool prints the absolute workspace path and the current time.

Two chat completions through ``task.client``: the prompt, then the "tool
output" (``cwd=<workspace> at <ISO time>``) as a second user turn.  The test
server echoes it, so the model's reply holds the path too.  Both differ on
every run; only scrubbing lets a fresh recording replay unchanged.
"""

from __future__ import annotations

import datetime
import os

from evaltape.scoring import Task


def _ask(task: Task, messages: list[dict[str, str]]) -> str:
    key = os.environ.get("OPENAI_API_KEY", "")
    response = task.client.post(
        task.base_url.rstrip("/") + "/chat/completions",
        json={"model": task.model, "messages": messages},
        headers={"authorization": f"Bearer {key}"} if key else {},
    )
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"])


def run(task: Task) -> str:
    messages = [{"role": "user", "content": task.prompt}]
    first = _ask(task, messages)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    messages += [
        {"role": "assistant", "content": first},
        {"role": "user", "content": f"tool output: cwd={task.workspace} at {now}"},
    ]
    reply = _ask(task, messages)
    (task.workspace / "reply.txt").write_text(reply, encoding="utf-8")
    return reply
