"""The function evaltape calls once per attempt: your agent, with a client evaltape records."""

from __future__ import annotations

from openai import OpenAI

from evaltape.scoring import Task
from support_agent import answer


def run(task: Task) -> str:
    client = OpenAI(
        # The base_url setting (default https://api.openai.com/v1); $OPENAI_BASE_URL wins, as
        # in the SDK, for an OpenAI-compatible server (vLLM, llama.cpp, Ollama).
        base_url=task.environ.get("OPENAI_BASE_URL") or task.base_url,
        api_key=task.environ.get("OPENAI_API_KEY", "no-key-needed-in-replay"),
        http_client=task.client,  # records when live, serves the tape in replay
    )
    return answer(client, task.model, task.prompt)
