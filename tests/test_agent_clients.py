"""Python agents on the real openai and anthropic SDKs, sync and async, through the
clients their ``Task`` hands them: recorded live against 127.0.0.1 servers and replayed."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from builders import CHAT_URL as CHAT
from builders import chat_exchange
from fakeapi import FakeAPI

from evaltape.recorder import Exchange, RecordingTransport, TapeReader, fold
from evaltape.replay import ReplayTransport, replay_client
from evaltape.scoring import read_record, resolve_run

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


def project(root: Path, agent: str, **settings: str) -> Path:
    (root / "evals").mkdir(parents=True)
    case = {
        "id": "ask",
        "prompt": "hello",
        "failureCategory": "runner",
        "whyModelBacked": "exercises SDK clients against a fake provider",
        "expectMaxTurns": 5,
    }
    (root / "evals" / "basic.jsonl").write_text(json.dumps(case) + "\n")
    lines = [f"agent = {json.dumps(agent)}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (root / "evaltape.toml").write_text("\n".join(lines) + "\n")
    return root


def evaltape(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base |= {"PYTHONPATH": os.pathsep.join([str(AGENTS.parent), str(REPO)])}
    base |= {"OPENAI_API_KEY": "sk-test-openai-0123456789", "ANTHROPIC_API_KEY": "sk-ant-test-0"}
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=root,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def reply_of(tape: Path) -> str:
    (session,) = TapeReader(tape).sessions()
    files = {f.path: f.data.decode() for f in fold(session.events).workspace}
    return files["reply.txt"]


def replayed(root: Path) -> tuple[Any, Path]:
    results = root / ".evaltape" / "results"
    (attempt,) = read_record(resolve_run(results)).attempts
    return attempt, results / attempt.tape


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "paths", "expected"),
    [
        (
            "agents.sdk_agents:async_openai",
            ["/v1/chat/completions"] * 2,
            "echo: hello / echo: stream it",
        ),
        ("agents.sdk_agents:anthropic_sync", ["/v1/messages"], "echo: hello"),
        (
            "agents.sdk_agents:anthropic_async",
            ["/v1/messages"] * 2,
            "echo: hello / echo: stream it",
        ),
    ],
)
def test_a_python_agent_on_an_sdk_client_records_live_and_replays(
    tmp_path: Path, agent: str, paths: list[str], expected: str
) -> None:
    with FakeAPI() as api:
        root = project(tmp_path, agent, base_url=api.openai_url)
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1", "--upstream",
                        f"anthropic={api.base_url}")  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
        assert "fake-1: 1/1 passed" in live.stdout
        assert [r.path for r in api.requests] == paths
    assert reply_of(root / "cassettes" / "basic" / "ask.tape") == expected
    replay = evaltape(root, "replay")  # the server is gone: only the tape answers
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "OK: 1 attempt replayed, harness unchanged" in replay.stdout
    assert reply_of(replayed(root)[1]) == expected


@pytest.mark.slow
def test_an_anthropic_divergence_in_process_is_not_retried(tmp_path: Path) -> None:
    with FakeAPI() as api:
        root = project(tmp_path, "agents.sdk_agents:anthropic_sync", base_url=api.openai_url)
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1", "--upstream",
                        f"anthropic={api.base_url}")  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
    replay = evaltape(root, "replay", SDK_AGENT_VARIANT=" (changed)")
    assert replay.returncode != 0
    attempt, tape = replayed(root)
    assert "user prompt changed" in attempt.reason
    (session,) = TapeReader(tape).sessions()
    sent = [e for e in session.events if isinstance(e, Exchange)]
    assert len(sent) == 1  # the SDK's two retries would have made three


class ReverseServer:
    """A chat server that holds ``count`` requests, then answers the last to arrive first.

    The n-th request to arrive gets ``answer-n``, so calls that start together
    end in another order than they started.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.arrived = 0
        self.turn = count - 1
        self.cond = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, text: str) -> None:
                message = {"role": "assistant", "content": text}
                body = json.dumps(
                    {
                        "id": "c",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "fake-1",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                if b"warm up" in raw:
                    self.answer("ready")
                    return
                with owner.cond:
                    n = owner.arrived
                    owner.arrived += 1
                    owner.cond.notify_all()
                    owner.cond.wait_for(lambda: owner.arrived >= owner.count and owner.turn == n)
                self.answer(f"answer-{n}")
                with owner.cond:
                    owner.turn -= 1
                    owner.cond.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ReverseServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_concurrent_identical_calls_replay_their_recorded_answers_in_send_order(
    tmp_path: Path,
) -> None:
    with ReverseServer(3) as server:
        root = project(tmp_path, "agents.sdk_agents:gather_openai", base_url=server.url)
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1")
        assert live.returncode == 0, live.stdout + live.stderr
    tape = root / "cassettes" / "basic" / "ask.tape"
    (recorded,) = TapeReader(tape).sessions()
    sent = sorted((e for e in recorded.events if isinstance(e, Exchange)), key=lambda e: e.at)
    by_start = [json.loads(e.response.chunks[0].data)["choices"][0]["message"]["content"]
                for e in sent[1:] if e.response is not None]  # fmt: skip
    assert sorted(by_start) == ["answer-0", "answer-1", "answer-2"]
    replay = evaltape(root, "replay")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    # In replay the calls are sent in gather order: each gets the answer of the
    # recorded call that started at its rank.
    assert reply_of(replayed(root)[1]) == " | ".join(by_start)


def test_identical_requests_are_served_by_recorded_start_time_not_tape_order() -> None:
    question = [{"role": "user", "content": "same"}]
    ended_first = [
        chat_exchange(at, question, {"role": "assistant", "content": f"answer-{n}"}, model="m")
        for n, at in ((2, 0.2), (1, 0.1), (0, 0.0))
    ]
    arrivals: list[asyncio.Task[Any] | None] = []

    class NotingArrivals(ReplayTransport):
        """Notes the task of each request as it reaches the tape."""

        async def handle_async_request(self, request: Any) -> Any:
            arrivals.append(asyncio.current_task())
            return await super().handle_async_request(request)

    tape = NotingArrivals(ended_first, ignore_headers=["accept", "content-type"])

    # Gather order is not arrival order: a fresh AsyncOpenAI resolves its platform
    # in a worker thread before its first request, and the three calls resume in the
    # order those threads finish.  So each answer is checked against the order its
    # request reached the tape.
    async def ask_three() -> list[str]:
        http = replay_client(tape, async_=True, flavor="httpx2")
        client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", http_client=http)

        async def ask() -> tuple[asyncio.Task[Any] | None, str]:
            answer = await client.chat.completions.create(model="m", messages=question)
            return asyncio.current_task(), str(answer.choices[0].message.content)

        answers = dict(await asyncio.gather(*(ask() for _ in range(3))))
        assert len(answers) == len(arrivals) == 3
        return [answers[task] for task in arrivals]

    assert asyncio.run(ask_three()) == ["answer-0", "answer-1", "answer-2"]
    tape.finish()


class _Frozen:
    """A session writer whose clock never moves: every request is sent "at once"."""

    def __init__(self) -> None:
        self.events: list[Exchange] = []

    def now(self) -> float:
        return 0.0

    def append(self, event: Exchange) -> None:
        self.events.append(event)


def test_concurrent_identical_calls_keep_their_send_order_whatever_the_clock_says() -> None:
    # Three identical calls in flight at once, answered last-sent-first, recorded with a
    # clock too coarse to tell them apart: the tape lists them in the order they ended.
    done = [asyncio.Event() for _ in range(3)]
    arrived: list[int] = []

    async def answer(request: httpx.Request) -> httpx.Response:
        n = len(arrived)
        arrived.append(n)
        if n + 1 < len(done):
            await done[n + 1].wait()
        done[n].set()
        return httpx.Response(200, json={"answer": f"answer-{n}"})

    async def three(transport: Any) -> list[str]:
        async with httpx.AsyncClient(transport=transport) as client:
            calls = [client.post(CHAT, json={"same": True}) for _ in range(3)]
            return [r.json()["answer"] for r in await asyncio.gather(*calls)]

    writer = _Frozen()
    recorder = RecordingTransport(writer, httpx.MockTransport(answer))
    live = asyncio.run(three(recorder))
    assert live == ["answer-0", "answer-1", "answer-2"]
    ended = [json.loads(e.response.chunks[0].data)["answer"] for e in writer.events if e.response]
    assert ended == ["answer-2", "answer-1", "answer-0"]  # tape order is not send order
    # Replayed in the same call order, each call gets the answer it got live.
    assert asyncio.run(three(ReplayTransport(writer.events))) == live
