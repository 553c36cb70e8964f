"""A provider's broken 200 answer is infrastructure's failure, not the agent's.

``evaltape live`` in a real subprocess, the real openai SDK in the agent, and a
127.0.0.1 server that answers 200 with a body cut short, a body that is not
JSON, an error object, or a stream that stops before ``data: [DONE]``.  Each
attempt is attributed ``infra`` (verdict error, tainted); a good answer passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evaltape.recorder import SessionEnded, Status, TapeReader
from evaltape.scoring import Verdict, read_record, resolve_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent

GOOD = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "fake-1",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}
CHUNK = {
    "id": "chatcmpl-2",
    "object": "chat.completion.chunk",
    "created": 1700000000,
    "model": "fake-1",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "partial"}}],
}
ANSWERS: dict[str, tuple[str, bytes]] = {
    "good": ("application/json", json.dumps(GOOD).encode()),
    "truncated-json": ("application/json", json.dumps(GOOD).encode()[:40]),
    "invalid-json": ("application/json", b"<html>upstream said hello</html>"),
    "error-body": (
        "application/json",
        b'{"error": {"message": "the model is overloaded", "type": "server_error"}}',
    ),
    "truncated-sse": ("text/event-stream", b"data: " + json.dumps(CHUNK).encode() + b"\n\n"),
}

AGENT = """\
import openai

from evaltape.scoring import Task


def run(task: Task) -> str:
    client = openai.OpenAI(base_url=task.base_url, api_key="sk-test", http_client=task.client,
                           max_retries=0)
    messages = [{"role": "user", "content": task.prompt}]
    if "stream" in task.prompt:
        parts = client.chat.completions.create(model=task.model, messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in parts if c.choices)
    reply = client.chat.completions.create(model=task.model, messages=messages)
    return reply.choices[0].message.content
"""


class FaultyProvider:
    """Answers 200 with the body the prompt names (``ANSWERS``)."""

    def __init__(self) -> None:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                provider.requests += 1
                prompt = body["messages"][-1]["content"]
                kind, data = ANSWERS[prompt.split()[0]]
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def provider() -> Iterator[FaultyProvider]:
    server = FaultyProvider()
    yield server
    server.close()


def test_broken_answers_of_a_provider_are_infrastructure_failures(
    tmp_path: Path, provider: FaultyProvider
) -> None:
    (tmp_path / "evals").mkdir()
    prompts = {name: name + (" stream" if name.endswith("sse") else "") for name in ANSWERS}
    cases = [
        {
            "id": name,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "exercises attribution against a fake provider",
            "expectMaxTurns": 3,
        }
        for name, prompt in prompts.items()
    ]
    (tmp_path / "evals" / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "fault_agent.py").write_text(AGENT)
    (tmp_path / "evaltape.toml").write_text(
        f'agent = "fault_agent:run"\nbase_url = "{provider.url}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(REPO), OPENAI_API_KEY="sk-test-0123456789abcdefghijklmnop")
    live = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "live", "-m", "fake-1", "--retries", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert live.returncode == 0, live.stderr
    assert provider.requests == len(ANSWERS)
    results = tmp_path / ".evaltape" / "results"
    record = read_record(resolve_run(results))
    by_case = {a.case_id: a for a in record.attempts}
    assert by_case["good"].verdict is Verdict.PASSED and not by_case["good"].tainted
    faults = [name for name in ANSWERS if name != "good"]
    for name in faults:
        attempt = by_case[name]
        assert attempt.verdict is Verdict.ERROR, (name, attempt.reason)
        assert attempt.tainted, name
        assert attempt.reason.startswith(
            "infra_error: the provider answered HTTP 200 with an unusable body: "
        ), (name, attempt.reason)
    assert "[DONE]" in by_case["truncated-sse"].reason
    ends = {}
    for tape in (results / "tapes").rglob("*.tape"):
        for session in TapeReader(tape).sessions():
            end = session.events[-1]
            assert isinstance(end, SessionEnded)
            ends[session.session_id] = end.status
    assert {ends[by_case[n].session_id] for n in faults} == {Status.INFRA_ERROR}
