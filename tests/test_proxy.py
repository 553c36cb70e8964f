"""Record and replay any program through the local proxy: real subprocesses, real servers."""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import anthropic
import pytest
from endless import left_running
from fakeapi import FakeAPI, Reply

from evaltape.recorder import Exchange, RecordedSession, SessionStarted, TapeReader, open_session
from evaltape.recorder.tape import new_session_id
from evaltape.replay import Diverged, ReplayTransport, TapeProxy, Upstreams, run_program

DEAD_URL = "http://127.0.0.1:9"
"""Nothing listens here: a request that reaches it fails to connect."""

AGENT = r'''
"""A tiny agent using only the standard library, configured by OPENAI_BASE_URL."""
import json, os, sys, urllib.error, urllib.request

BASE = os.environ["OPENAI_BASE_URL"]
PROMPT = sys.argv[1]

def post(body):
    request = urllib.request.Request(
        BASE + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer sk-agent"},
    )
    return urllib.request.urlopen(request, timeout=20)

def ask(content, stream):
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": content}]}
    if not stream:
        return json.load(post(body))["choices"][0]["message"]["content"]
    text = ""
    with post({**body, "stream": True}) as response:
        for line in response:
            line = line.strip()
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                delta = json.loads(line[6:])["choices"][0]["delta"]
                text += delta.get("content") or ""
    return text

try:
    first = ask(PROMPT, stream=False)
    print("reply 1:", first)
    print("reply 2:", ask("and now stream: " + first, stream=True))
except urllib.error.HTTPError as exc:
    print("status", exc.code, json.load(exc)["error"]["type"])
    sys.exit(3)
'''


@pytest.fixture
def agent(tmp_path: Path) -> list[str]:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return [sys.executable, str(path)]


def header() -> SessionStarted:
    return SessionStarted(session_id=new_session_id(), started_at=time.time())


def only_session(path: Path) -> RecordedSession:
    (session,) = TapeReader(path).sessions()
    return session


def exchanges(session: RecordedSession) -> list[Exchange]:
    return [e for e in session.events if isinstance(e, Exchange)]


def record_agent(api: FakeAPI, agent: list[str], tmp_path: Path, prompt: str) -> RecordedSession:
    tape = tmp_path / "agent.tape"
    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        result = run_program([*agent, prompt], cwd=tmp_path, proxy=proxy, timeout=30)
    assert result.exit_code == 0, result.stderr
    assert not proxy.errors and not proxy.upstream_failures
    return only_session(tape)


@pytest.mark.slow
def test_a_recorded_program_replays_with_the_same_output(
    api: FakeAPI, agent: list[str], tmp_path: Path
) -> None:
    session = record_agent(api, agent, tmp_path, "hello there")
    api.stop()
    recorded = exchanges(session)
    assert [e.request.url.rsplit("/", 2)[-2:] for e in recorded] == [["chat", "completions"]] * 2
    assert [e.response.streamed for e in recorded if e.response] == [False, True]
    assert all("sk-agent" not in repr(e.request.headers) for e in recorded)

    tape = ReplayTransport(session)
    with TapeProxy.replaying(tape) as proxy:
        replayed = run_program([*agent, "hello there"], cwd=tmp_path, proxy=proxy, timeout=30)
    assert replayed.exit_code == 0, replayed.stderr
    assert replayed.stdout.splitlines() == [
        "reply 1: echo: hello there",
        "reply 2: echo: and now stream: echo: hello there",
    ]
    assert proxy.errors == []
    tape.finish()


@pytest.mark.slow
def test_a_changed_prompt_is_a_divergence_the_program_and_the_runner_see(
    api: FakeAPI, agent: list[str], tmp_path: Path
) -> None:
    session = record_agent(api, agent, tmp_path, "Summarise notes.txt")
    api.stop()
    with TapeProxy.replaying(session) as proxy:
        result = run_program([*agent, "Summarize notes.txt"], cwd=tmp_path, proxy=proxy, timeout=30)
    assert result.exit_code == 3
    assert result.stdout.strip() == "status 599 evaltape_diverged"
    (error,) = proxy.errors
    assert isinstance(error, Diverged)
    assert error.path == "messages[0].content"
    assert (error.sent, error.recorded) == ('"Summarize notes.txt"', '"Summarise notes.txt"')


def read_chunked(sock: socket.socket, on_chunk: threading.Event) -> tuple[bytes, list[bytes]]:
    """Read one chunked response off ``sock``: its head and its chunks as framed."""
    stream = sock.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += stream.readline()
    chunks = []
    while True:
        size = int(stream.readline().strip(), 16)
        if size == 0:
            stream.readline()
            return head, chunks
        chunks.append(stream.read(size))
        stream.readline()
        on_chunk.set()


def under(proxy: TapeProxy, path: str) -> str:
    """``path`` under the proxy's base (which carries its token)."""
    return urllib.parse.urlsplit(proxy.url).path + path


def post_raw(url: str, path: str, body: bytes) -> socket.socket:
    parts = urllib.parse.urlsplit(url)
    path = parts.path + path
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
    )
    return sock


def test_stream_chunks_reach_the_program_one_by_one_as_recorded(
    api: FakeAPI, tmp_path: Path
) -> None:
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "one two three"}]}
    ).encode()
    tape = tmp_path / "stream.tape"
    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        _, live_chunks = read_chunked(
            post_raw(proxy.url, "/v1/chat/completions", body), threading.Event()
        )
    (exchange,) = exchanges(only_session(tape))
    assert exchange.response is not None
    recorded = [c.data for c in exchange.response.chunks]
    assert len(recorded) > 3 and live_chunks == recorded

    # Replay with a clock that holds the last chunk back until the program has
    # seen the first: a proxy that buffered the body would never let it through.
    first_seen = threading.Event()
    waited: list[bool] = []

    def sleep(_: float) -> None:
        if len(waited) == len(recorded) - 1:
            waited.append(first_seen.wait(timeout=5))
        else:
            waited.append(True)

    replay = ReplayTransport(only_session(tape), timing="real", sleep=sleep)
    with TapeProxy.replaying(replay) as proxy:
        head, replayed = read_chunked(post_raw(proxy.url, "/v1/chat/completions", body), first_seen)
    assert waited == [True] * len(recorded)
    assert replayed == recorded
    assert b"content-type: text/event-stream" in head.lower()


@pytest.mark.slow
def test_anthropic_requests_go_to_the_anthropic_upstream_and_replay(
    api: FakeAPI, tmp_path: Path
) -> None:
    upstreams = Upstreams(openai=DEAD_URL, anthropic=api.base_url)
    tape = tmp_path / "claude.tape"

    def ask(proxy: TapeProxy) -> list[str]:
        client = anthropic.Anthropic(base_url=proxy.env()["ANTHROPIC_BASE_URL"], api_key="k")
        reply = client.messages.create(
            model="claude-test", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        with client.messages.stream(
            model="claude-test", max_tokens=50, messages=[{"role": "user", "content": "streamed"}]
        ) as stream:
            streamed = stream.get_final_text()
        return [block.text for block in reply.content if block.type == "text"] + [streamed]

    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=upstreams) as p,
    ):
        live = ask(p)
    api.stop()
    assert live == ["echo: hi", "echo: streamed"]
    assert [e.request.url for e in exchanges(only_session(tape))] == [
        api.base_url + "/v1/messages"
    ] * 2
    replay = ReplayTransport(only_session(tape))
    with TapeProxy.replaying(replay) as proxy:
        assert ask(proxy) == live
    replay.finish()


def test_an_unreachable_upstream_is_a_502_live_and_in_replay(tmp_path: Path) -> None:
    body = b'{"model": "m", "messages": []}'
    tape = tmp_path / "down.tape"

    def status_and_body(proxy: TapeProxy) -> tuple[int, object]:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        conn.request(
            "POST", under(proxy, "/v1/chat/completions"), body, {"content-type": "application/json"}
        )
        response = conn.getresponse()
        return response.status, json.load(response)

    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(DEAD_URL)) as proxy,
    ):
        live = status_and_body(proxy)
    assert live[0] == 502
    assert "ConnectError" in json.dumps(live[1])
    assert len(proxy.upstream_failures) == 1
    (exchange,) = exchanges(only_session(tape))
    assert exchange.error is not None and exchange.error.type == "ConnectError"
    with TapeProxy.replaying(only_session(tape)) as proxy:
        assert status_and_body(proxy) == live


@pytest.mark.slow
def test_a_program_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(3600)\n"
    )
    with TapeProxy.replaying([]) as proxy:
        result = run_program([sys.executable, "-c", script], cwd=tmp_path, proxy=proxy, timeout=1.0)
    # the program sleeps an hour: a SIGKILL (-9) flagged timed_out is the timeout's, not its end
    assert result.timed_out and result.exit_code == -9
    assert result.stdout == "started\n"
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert left_running([child]) == []  # its hour is not up: only a kill ended it
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_placeholders_and_env_point_the_program_at_the_proxy(tmp_path: Path) -> None:
    with TapeProxy.replaying([]) as proxy:
        result = run_program(
            [
                sys.executable,
                "-c",
                "import os, sys; print(sys.argv[1], os.environ['OPENAI_API_KEY'])",
                "{ANTHROPIC_BASE_URL}",
            ],
            cwd=tmp_path,
            proxy=proxy,
            timeout=10,
            env={"PATH": os.environ.get("PATH", "")},
        )
        assert result.stdout.split() == [proxy.url, "evaltape-replay"]
        assert proxy.env()["OPENAI_BASE_URL"] == proxy.url + "/v1"


def post_chunked(url: str, path: str, body: bytes) -> socket.socket:
    """Send ``body`` with chunked transfer-encoding, in two pieces."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path + path
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    half = len(body) // 2
    pieces = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]))
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n%s0\r\n\r\n"
        % (path.encode(), pieces)
    )
    return sock


def test_concurrent_requests_are_served_concurrently(api: FakeAPI, tmp_path: Path) -> None:
    def body(text: str) -> bytes:
        return json.dumps(
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}]}
        ).encode()

    tape = tmp_path / "pair.tape"
    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        for text in ("left", "right"):
            read_chunked(
                post_chunked(proxy.url, "/v1/chat/completions", body(text)), threading.Event()
            )
    assert [
        json.loads(e.request.body)["messages"][0]["content"] for e in exchanges(only_session(tape))
    ] == ["left", "right"]

    # Both responses wait for each other before their first chunk: served one
    # after the other, the barrier would break.
    barrier = threading.Barrier(2, timeout=5)
    calls = iter(range(1_000))
    broken: list[bool] = []

    def sleep(_: float) -> None:
        if next(calls) < 2:  # the first chunk of each response
            try:
                barrier.wait()
                broken.append(False)
            except threading.BrokenBarrierError:
                broken.append(True)

    replay = ReplayTransport(only_session(tape), timing="real", sleep=sleep)
    results: dict[str, list[bytes]] = {}
    with TapeProxy.replaying(replay) as proxy:

        def fetch(text: str) -> None:
            sock = post_chunked(proxy.url, "/v1/chat/completions", body(text))
            results[text] = read_chunked(sock, threading.Event())[1]

        threads = [threading.Thread(target=fetch, args=(t,)) for t in ("right", "left")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    assert broken == [False, False]
    assert b"echo: left" not in b"".join(results["right"])
    assert b"left" in b"".join(results["left"])
    replay.finish()


def test_content_encoding_passes_through_untouched(api: FakeAPI, tmp_path: Path) -> None:
    api.script(Reply(gzip=True))
    body = b'{"model": "m", "messages": [{"role": "user", "content": "zip"}]}'

    def fetch(proxy: TapeProxy) -> tuple[str | None, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        headers = {"content-type": "application/json", "accept-encoding": "gzip"}
        conn.request("POST", under(proxy, "/v1/chat/completions"), body, headers)
        response = conn.getresponse()
        return response.getheader("content-encoding"), response.read()

    tape = tmp_path / "gzip.tape"
    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        live = fetch(proxy)
    assert live[0] == "gzip"
    reply = json.loads(gzip.decompress(live[1]))
    assert reply["choices"][0]["message"]["content"] == "echo: zip"
    with TapeProxy.replaying(only_session(tape)) as proxy:
        assert fetch(proxy) == live


def test_a_stream_broken_upstream_breaks_the_program_stream_live_and_in_replay(
    api: FakeAPI, tmp_path: Path
) -> None:
    api.script(Reply(disconnect_after=2))
    body = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "a b c"}]}'

    def fetch(proxy: TapeProxy) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        conn.request(
            "POST", under(proxy, "/v1/chat/completions"), body, {"content-type": "application/json"}
        )
        response = conn.getresponse()
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as caught:
            response.read()
        return caught.value.partial

    tape = tmp_path / "broken.tape"
    with (
        open_session(tape, header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        live = fetch(proxy)
    (exchange,) = exchanges(only_session(tape))
    assert exchange.error is not None and exchange.error.after_chunks == 2
    assert live.count(b"data: ") == 2
    with TapeProxy.replaying(only_session(tape)) as proxy:
        assert fetch(proxy) == live


def test_a_request_with_broken_framing_gets_a_400(tmp_path: Path) -> None:
    with TapeProxy.replaying([]) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        sock.sendall(
            b"POST %s HTTP/1.1\r\nhost: x\r\n"
            b"transfer-encoding: chunked\r\n\r\nzz\r\n"
            % under(proxy, "/v1/chat/completions").encode()
        )
        reply = sock.makefile("rb").read()
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == b"400"
    assert json.loads(payload)["error"]["type"] == "evaltape_bad_request"
    assert proxy.errors == []
