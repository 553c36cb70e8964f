"""An agent that keeps calling the model: ``LOOP_AGENT_CALLS`` chat completions (default 50).

Each call adds the model's answer and a new user message (the prompt again, so
the chat server's markers apply to every call) to the conversation.

- As a Python agent, ``loop_agent:run``: through ``task.client``; the first
  error (an error status, or a call that could not be sent) is raised.
  ``LOOP_AGENT_FAIL_AFTER=k`` raises after the k-th answered call, as a
  harness that broke mid-way would.  ``LOOP_AGENT_TEMPERATURE_FROM=k`` adds
  ``temperature`` to the k-th request and every later one, as an edit of a
  request parameter that only later turns send would.
- As a command agent, ``python loop_agent.py PROMPT``: urllib against
  ``$OPENAI_BASE_URL`` (``LOOP_AGENT_TEMPERATURE_FROM`` as above); an error
  answer's status and body are written to ``refused.json`` in its working
  folder and it exits 1.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command agent runs without importing evaltape
    from evaltape.scoring import Task


def _calls() -> int:
    return int(os.environ.get("LOOP_AGENT_CALLS", "50"))


def _next(messages: list[dict[str, str]], reply: str, prompt: str, n: int) -> None:
    messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": f"{prompt} (call {n + 2})"})


def run(task: Task) -> str:
    fail_after = int(os.environ.get("LOOP_AGENT_FAIL_AFTER", "0"))
    temperature_from = int(os.environ.get("LOOP_AGENT_TEMPERATURE_FROM", "0"))
    key = os.environ.get("OPENAI_API_KEY", "")
    messages = [{"role": "user", "content": task.prompt}]
    reply = ""
    for n in range(_calls()):
        body: dict[str, Any] = {"model": task.model, "messages": messages}
        if temperature_from and n + 1 >= temperature_from:
            body["temperature"] = 0.5
        response = task.client.post(
            task.base_url.rstrip("/") + "/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {key}"},
        )
        response.raise_for_status()
        reply = str(response.json()["choices"][0]["message"]["content"])
        if n + 1 == fail_after:
            raise RuntimeError(f"the harness broke after {fail_after} call(s)")
        _next(messages, reply, task.prompt, n)
    return reply


def _post(body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", ""),
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


def main() -> int:
    prompt = sys.argv[1]
    temperature_from = int(os.environ.get("LOOP_AGENT_TEMPERATURE_FROM", "0"))
    messages = [{"role": "user", "content": prompt}]
    for n in range(_calls()):
        body: dict[str, Any] = {"model": os.environ["EVALTAPE_MODEL"], "messages": messages}
        if temperature_from and n + 1 >= temperature_from:
            body["temperature"] = 0.5
        try:
            data = _post(body)
        except urllib.error.HTTPError as exc:
            refused = {"status": exc.code, "body": json.loads(exc.read())}
            with open("refused.json", "w", encoding="utf-8") as handle:
                json.dump(refused, handle)
            return 1
        _next(messages, data["choices"][0]["message"]["content"], prompt, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
