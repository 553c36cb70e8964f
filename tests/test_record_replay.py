"""Record real SDK traffic against a local fake API, stop it, replay from the tape."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from fakeapi import FakeAPI, Reply, ToolUse

from evaltape.recorder import (
    Exchange,
    RecordedSession,
    RecordingTransport,
    SessionStarted,
    TapeReader,
    open_session,
    recording_client,
)
from evaltape.recorder.tape import SessionWriter, new_session_id
from evaltape.replay import (
    Diverged,
    Exhausted,
    NoRecording,
    ReplayTransport,
    UnusedRecordings,
    replay_client,
)

DEAD_URL = "http://127.0.0.1:9"
"""Base URL for replays: nothing listens there, so any real request would fail."""
DEAD_OPENAI = DEAD_URL + "/v1"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
READ = ToolUse("read_file", {"path": "notes.txt"})


def record(tmp_path: Path, run: Callable[[SessionWriter], None]) -> RecordedSession:
    """Run ``run`` with a session writer, then read the session back from the tape."""
    path = tmp_path / "session.tape"
    header = SessionStarted(session_id=new_session_id(), started_at=time.time())
    with open_session(path, header) as writer:
        run(writer)
    (session,) = TapeReader(path).sessions()
    return session


def exchanges(session: RecordedSession) -> list[Exchange]:
    return [e for e in session.events if isinstance(e, Exchange)]


def chat(client: openai.OpenAI, prompt: str, **kw: Any) -> Any:
    return client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": prompt}], **kw
    )


# -- OpenAI ---------------------------------------------------------------------


def openai_sync_calls(client: openai.OpenAI) -> list[Any]:
    out: list[Any] = [chat(client, "hello").model_dump()]
    out.append(chat(client, "use a tool", tools=TOOLS).model_dump())
    stream = chat(client, "stream it", stream=True, stream_options={"include_usage": True})
    out.append([c.model_dump() for c in stream])
    out.append(client.responses.create(model="gpt-test", input="plain", tools=[]).model_dump())
    events = client.responses.create(model="gpt-test", input="streamed", stream=True)
    out.append([e.model_dump() for e in events])
    return out


def test_openai_sync_replays_after_the_server_is_gone(api: FakeAPI, tmp_path: Path) -> None:
    api.script(Reply(), Reply(tool_calls=(READ,)), Reply(tool_calls=(READ,)))
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, flavor="httpx2")
        live.extend(
            openai_sync_calls(
                openai.OpenAI(base_url=api.openai_url, api_key="sk-live", http_client=http)
            )
        )

    session = record(tmp_path, run)
    api.stop()
    assert [len(e.response.chunks) > 1 for e in exchanges(session) if e.response] == [
        False,
        False,
        True,
        False,
        True,
    ]
    tape = ReplayTransport(session)
    client = openai.OpenAI(
        base_url=DEAD_OPENAI, api_key="sk-other", http_client=replay_client(tape, flavor="httpx2")
    )
    assert openai_sync_calls(client) == live
    assert live[1]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "read_file"
    tape.finish()
    assert not tape.tainted


def test_openai_async_replays_streams_and_tool_calls(api: FakeAPI, tmp_path: Path) -> None:
    async def calls(client: openai.AsyncOpenAI) -> list[Any]:
        a = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "async"}], tools=TOOLS
        )
        s = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "async stream"}], stream=True
        )
        chunks = [c.model_dump() async for c in s]
        r = await client.responses.create(model="gpt-test", input="async responses")
        return [a.model_dump(), chunks, r.model_dump()]

    api.script(Reply(tool_calls=(READ,)), Reply(tool_calls=(READ,)))
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, async_=True, flavor="httpx2")
        client = openai.AsyncOpenAI(base_url=api.openai_url, api_key="sk-live", http_client=http)
        live.extend(asyncio.run(calls(client)))

    session = record(tmp_path, run)
    api.stop()
    tape = ReplayTransport(session)
    http = replay_client(tape, async_=True, flavor="httpx2")
    client = openai.AsyncOpenAI(base_url=DEAD_OPENAI, api_key="sk-x", http_client=http)
    assert asyncio.run(calls(client)) == live
    tool_deltas = [
        c for c in live[1] if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    ]
    assert tool_deltas
    tape.finish()


def test_changed_prompt_raises_diverged_naming_the_json_path(api: FakeAPI, tmp_path: Path) -> None:
    def messages(user: str) -> list[Any]:
        return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": user}]

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, flavor="httpx2")
        client = openai.OpenAI(base_url=api.openai_url, api_key="sk-live", http_client=http)
        client.chat.completions.create(model="gpt-test", messages=messages("Summarise notes.txt"))

    session = record(tmp_path, run)
    tape = ReplayTransport(session)
    client = openai.OpenAI(
        base_url=DEAD_OPENAI, api_key="sk-x", http_client=replay_client(tape, flavor="httpx2")
    )
    with pytest.raises(Diverged) as caught:
        client.chat.completions.create(model="gpt-test", messages=messages("Summarize notes.txt"))
    err = caught.value
    assert err.path == "messages[1].content"
    assert err.nearest == 1
    assert session.session_id in str(err)
    assert '"Summarize notes.txt"' in str(err) and '"Summarise notes.txt"' in str(err)
    assert "request #1 of this replay" in str(err)
    with pytest.raises(Diverged):
        tape.finish()


@pytest.mark.slow
def test_429_then_200_replays_without_sleeping(
    api: FakeAPI, tmp_path: Path, sleeps: list[float]
) -> None:
    api.script(Reply(status=429, headers=(("retry-after", "1"),)), Reply(text="finally"))
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, flavor="httpx2")
        client = openai.OpenAI(
            base_url=api.openai_url, api_key="sk", http_client=http, max_retries=2
        )
        live.append(chat(client, "rate limited").model_dump())
        assert sum(sleeps) >= 1.0  # the SDK honoured retry-after live

    session = record(tmp_path, run)
    api.stop()
    assert [e.response.status for e in exchanges(session) if e.response] == [429, 200]
    tape = ReplayTransport(session)
    client = openai.OpenAI(
        base_url=DEAD_OPENAI, api_key="sk", http_client=replay_client(tape, flavor="httpx2")
    )
    started = len(sleeps)
    assert chat(client, "rate limited").model_dump() == live[0]
    assert sum(sleeps[started:]) < 0.3
    tape.finish()


@pytest.mark.slow
def test_fifty_concurrent_requests_record_and_replay(api: FakeAPI, tmp_path: Path) -> None:
    prompts = [f"question number {i}" for i in range(50)]

    async def ask(client: openai.AsyncOpenAI, order: list[str]) -> dict[str, str]:
        async def one(p: str) -> tuple[str, str]:
            r = await client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": p}]
            )
            return p, r.choices[0].message.content or ""

        return dict(await asyncio.gather(*(one(p) for p in order)))

    live: dict[str, str] = {}

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, async_=True, flavor="httpx2")
        client = openai.AsyncOpenAI(base_url=api.openai_url, api_key="sk", http_client=http)
        live.update(asyncio.run(ask(client, prompts)))

    session = record(tmp_path, run)
    api.stop()
    assert len(exchanges(session)) == 50
    shuffled = random.Random(7).sample(prompts, len(prompts))
    tape = ReplayTransport(session)
    http = replay_client(tape, async_=True, flavor="httpx2")
    client = openai.AsyncOpenAI(base_url=DEAD_OPENAI, api_key="sk", http_client=http)
    replayed = asyncio.run(ask(client, shuffled))
    assert replayed == live
    assert all(replayed[p] == f"echo: {p}" for p in prompts)
    tape.finish()


# -- Anthropic ------------------------------------------------------------------


def anthropic_calls(client: anthropic.Anthropic) -> list[Any]:
    msgs = [{"role": "user", "content": "read my notes"}]
    out: list[Any] = [
        client.messages.create(
            model="claude-test", max_tokens=64, messages=msgs, tools=ANTHROPIC_TOOLS
        ).model_dump()
    ]
    stream = client.messages.create(
        model="claude-test", max_tokens=64, messages=msgs, tools=ANTHROPIC_TOOLS, stream=True
    )
    out.append([e.model_dump() for e in stream])
    with client.messages.stream(
        model="claude-test",
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": "plain"}],
    ) as s:
        out.append(s.get_final_message().model_dump())
    return out


def test_anthropic_sync_replays_tool_use_and_streams(api: FakeAPI, tmp_path: Path) -> None:
    api.script(Reply(tool_calls=(READ,)), Reply(tool_calls=(READ,)))
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, flavor="httpx2")
        client = anthropic.Anthropic(base_url=api.base_url, api_key="sk-ant-live", http_client=http)
        live.extend(anthropic_calls(client))

    session = record(tmp_path, run)
    api.stop()
    tape = ReplayTransport(session)
    client = anthropic.Anthropic(
        base_url=DEAD_URL, api_key="sk-ant-x", http_client=replay_client(tape, flavor="httpx2")
    )
    assert anthropic_calls(client) == live
    assert live[0]["content"][1]["input"] == {"path": "notes.txt"}
    tape.finish()


def test_anthropic_async_500_then_200_replays(
    api: FakeAPI, tmp_path: Path, sleeps: list[float]
) -> None:
    async def call(client: anthropic.AsyncAnthropic) -> Any:
        stream = await client.messages.create(
            model="claude-test",
            max_tokens=64,
            messages=[{"role": "user", "content": "flaky"}],
            stream=True,
        )
        return [e.model_dump() async for e in stream]

    api.script(Reply(status=500, headers=(("retry-after-ms", "20"),)))
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, async_=True, flavor="httpx2")
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="k", http_client=http)
        live.append(asyncio.run(call(client)))

    session = record(tmp_path, run)
    api.stop()
    assert [e.response.status for e in exchanges(session) if e.response] == [500, 200]
    tape = ReplayTransport(session)
    http = replay_client(tape, async_=True, flavor="httpx2")
    client = anthropic.AsyncAnthropic(base_url=DEAD_URL, api_key="k", http_client=http)
    started = len(sleeps)
    assert [asyncio.run(call(client))] == live
    assert sum(sleeps[started:]) < 0.3
    tape.finish()


# -- plain httpx and httpx2: bytes, chunks, encodings, failures -----------------


def raw_chunks(client: Any, url: str, body: dict[str, Any]) -> list[bytes]:
    with client.stream("POST", url, json=body) as response:
        return list(response.iter_raw())


@pytest.mark.parametrize("flavor", ["httpx", "httpx2"])
def test_stream_chunks_replay_with_the_recorded_boundaries(
    api: FakeAPI, tmp_path: Path, flavor: str
) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c d e"}]}
    url = api.openai_url + "/chat/completions"
    live: list[bytes] = []

    def run(writer: SessionWriter) -> None:
        with recording_client(writer, flavor=flavor) as client:  # type: ignore[call-overload]
            live.extend(raw_chunks(client, url, body))

    session = record(tmp_path, run)
    api.stop()
    (exchange,) = exchanges(session)
    assert exchange.response is not None and exchange.response.streamed
    assert [c.data for c in exchange.response.chunks] == live
    assert len(live) > 3
    offsets = [c.at for c in exchange.response.chunks]
    assert offsets == sorted(offsets) and offsets[-1] < exchange.duration
    with replay_client(session, flavor=flavor) as client:  # type: ignore[call-overload]
        assert raw_chunks(client, url, body) == live


def test_gzip_body_is_recorded_encoded_and_decoded_on_replay(api: FakeAPI, tmp_path: Path) -> None:
    api.script(Reply(text="squeezed", gzip=True))
    body = {"model": "m", "messages": [{"role": "user", "content": "zip"}]}
    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        with recording_client(writer) as client:
            live.append(client.post(api.openai_url + "/chat/completions", json=body).json())

    session = record(tmp_path, run)
    (exchange,) = exchanges(session)
    assert exchange.response is not None
    assert ("content-encoding", "gzip") in exchange.response.headers
    assert exchange.response.body[:2] == b"\x1f\x8b"  # still gzip on the tape
    with replay_client(session) as client:
        replayed = client.post(DEAD_URL + "/v1/chat/completions", json=body).json()
    assert replayed == live[0]
    assert replayed["choices"][0]["message"]["content"] == "squeezed"


@pytest.mark.parametrize("flavor", ["httpx", "httpx2"])
def test_mid_stream_disconnect_replays_as_the_same_error(
    api: FakeAPI, tmp_path: Path, flavor: str
) -> None:
    mod: Any = httpx if flavor == "httpx" else httpx2
    api.script(Reply(disconnect_after=3))
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "one two three"}],
    }
    url = api.openai_url + "/chat/completions"

    def consume(client: Any) -> tuple[list[bytes], BaseException]:
        got: list[bytes] = []
        with (
            pytest.raises(mod.RemoteProtocolError) as caught,
            client.stream("POST", url, json=body) as r,
        ):
            for data in r.iter_raw():
                got.append(data)
        return got, caught.value

    live: list[Any] = []

    def run(writer: SessionWriter) -> None:
        with recording_client(writer, flavor=flavor) as client:  # type: ignore[call-overload]
            live.extend(consume(client))

    session = record(tmp_path, run)
    api.stop()
    (exchange,) = exchanges(session)
    assert exchange.error is not None and exchange.error.type == "RemoteProtocolError"
    assert exchange.error.after_chunks == len(exchange.response.chunks)  # type: ignore[union-attr]
    assert exchange.error.after_bytes == sum(len(c) for c in live[0])
    with replay_client(session, flavor=flavor) as client:  # type: ignore[call-overload]
        chunks, error = consume(client)
    assert chunks == live[0]
    assert str(error) == str(live[1])


def test_connect_error_is_recorded_and_raised_again(tmp_path: Path) -> None:
    def run(writer: SessionWriter) -> None:
        with recording_client(writer) as client, pytest.raises(httpx.ConnectError):
            client.post(DEAD_URL + "/v1/messages", json={"model": "m"})

    session = record(tmp_path, run)
    (exchange,) = exchanges(session)
    assert exchange.response is None and exchange.error is not None
    assert exchange.error.type == "ConnectError"
    with replay_client(session) as client, pytest.raises(httpx.ConnectError):
        client.post("http://elsewhere.invalid/v1/messages", json={"model": "m"})


def test_secrets_are_redacted_before_the_tape(api: FakeAPI, tmp_path: Path) -> None:
    def run(writer: SessionWriter) -> None:
        http = recording_client(writer, flavor="httpx2")
        client = openai.OpenAI(
            base_url=api.openai_url,
            api_key="sk-proj-SECRETSECRETSECRET1234567890",
            http_client=http,
        )
        chat(client, "hi")

    session = record(tmp_path, run)
    (exchange,) = exchanges(session)
    assert dict(exchange.request.headers)["authorization"] == "[REDACTED]"
    assert api.requests[0].headers["authorization"].endswith("1234567890")


# -- the four misses ------------------------------------------------------------


def one_call_session(api: FakeAPI, tmp_path: Path) -> RecordedSession:
    def run(writer: SessionWriter) -> None:
        with recording_client(writer) as client:
            client.post(api.openai_url + "/chat/completions", json={"model": "m", "messages": []})

    return record(tmp_path, run)


def test_no_recording_for_an_empty_session_or_an_unrecorded_endpoint(
    api: FakeAPI, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    empty = record(tmp_path / "empty", lambda writer: None)
    with replay_client(empty) as client, pytest.raises(NoRecording, match="recorded no HTTP"):
        client.post(DEAD_URL + "/v1/chat/completions", json={"model": "m", "messages": []})
    session = one_call_session(api, tmp_path)
    with replay_client(session) as client, pytest.raises(NoRecording) as caught:
        client.post(DEAD_URL + "/v1/messages", json={"model": "m", "messages": []})
    assert "POST /v1/chat/completions" in str(caught.value)
    assert "nothing was recorded for this endpoint" in str(caught.value)


def test_exhausted_when_a_request_repeats_more_often_than_recorded(
    api: FakeAPI, tmp_path: Path
) -> None:
    session = one_call_session(api, tmp_path)
    body = {"model": "m", "messages": []}
    with replay_client(session) as client:
        assert client.post(DEAD_URL + "/v1/chat/completions", json=body).status_code == 200
        with pytest.raises(Exhausted) as caught:
            client.post(DEAD_URL + "/v1/chat/completions", json=body)
    assert caught.value.ordinal == 2 and caught.value.recorded == 1
    assert "request #2 of this replay" in str(caught.value)


def test_unused_recordings_listed_at_finish(api: FakeAPI, tmp_path: Path) -> None:
    def run(writer: SessionWriter) -> None:
        with recording_client(writer) as client:
            for text in ("first", "second", "third"):
                client.post(
                    api.openai_url + "/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": text}]},
                )

    session = record(tmp_path, run)
    tape = ReplayTransport(session)
    with replay_client(tape) as client:
        client.post(
            DEAD_URL + "/v1/chat/completions",
            json={"messages": [{"content": "first", "role": "user"}], "model": "m"},
        )
    with pytest.raises(UnusedRecordings) as caught:
        tape.finish()
    assert caught.value.unused == (2, 3)
    assert "#2 POST /v1/chat/completions, #3 POST /v1/chat/completions" in str(caught.value)


def test_lenient_mode_serves_the_nearest_and_taints(api: FakeAPI, tmp_path: Path) -> None:
    session = one_call_session(api, tmp_path)
    tape = ReplayTransport(session, strict=False)
    with replay_client(tape) as client:
        r = client.post(DEAD_URL + "/v1/chat/completions", json={"model": "other", "messages": []})
    assert r.status_code == 200 and r.json()["model"] == "m"
    assert tape.tainted
    (divergence,) = tape.divergences
    assert divergence.served == 1 and "diverged from the tape at model" in divergence.message
    tape.finish()


def test_real_timing_sleeps_by_the_recorded_offsets(api: FakeAPI, tmp_path: Path) -> None:
    api.script(Reply(event_delay=0.02))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c d"}]}
    url = api.openai_url + "/chat/completions"

    def run(writer: SessionWriter) -> None:
        with recording_client(writer) as client:
            raw_chunks(client, url, body)

    session = record(tmp_path, run)
    (exchange,) = exchanges(session)
    assert exchange.response is not None
    last = exchange.response.chunks[-1].at
    slept: list[float] = []
    tape = ReplayTransport(session, timing="real", sleep=slept.append)
    with replay_client(tape) as client:
        raw_chunks(client, url, body)
    assert sum(slept) == pytest.approx(last)
    halved: list[float] = []
    with replay_client(ReplayTransport(session, timing=0.5, sleep=halved.append)) as client:
        raw_chunks(client, url, body)
    assert sum(halved) == pytest.approx(last / 2)


def test_new_episodes_replays_matches_and_records_the_rest(api: FakeAPI, tmp_path: Path) -> None:
    old = one_call_session(api, tmp_path)
    header = SessionStarted(session_id=new_session_id(), started_at=time.time())
    path = tmp_path / "new.tape"
    with open_session(path, header) as writer:
        live = RecordingTransport(writer, httpx.HTTPTransport())
        tape = ReplayTransport(old, fallback=live)
        with httpx.Client(transport=tape) as client:  # type: ignore[arg-type]
            client.post(api.openai_url + "/chat/completions", json={"model": "m", "messages": []})
            extra = {"model": "m", "messages": [{"role": "user", "content": "new step"}]}
            reply = client.post(api.openai_url + "/chat/completions", json=extra).json()
    assert reply["choices"][0]["message"]["content"] == "echo: new step"
    assert len(api.requests) == 2  # one while recording the old session, one live now
    (new,) = TapeReader(path).sessions()
    assert [json.loads(e.request.body)["messages"] for e in exchanges(new)] == [
        [],
        extra["messages"],
    ]
