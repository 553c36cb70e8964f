"""What a recording keeps of a response beyond its bytes: the streamed message assembled
once (``Response.assembled``), which the fold reads instead of the chunks, and which
response headers go unrecorded (``recorder._volatile``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from builders import CHAT_URL

from evaltape.recorder import (
    Chunk,
    Exchange,
    SessionStarted,
    TapeReader,
    fold,
    open_session,
    recording_client,
)
from evaltape.recorder import apis as _apis
from evaltape.recorder._events import with_assembled
from evaltape.recorder._volatile import kept_headers, volatile
from evaltape.recorder.redact import Redactor

SID = "00000000000000e1"
SECRET = "sk-proj-" + "Q" * 40

PROVIDER_HEADERS = [
    ("content-type", "text/event-stream; charset=utf-8"),
    ("date", "Thu, 03 Dec 2026 14:02:49 GMT"),
    ("x-request-id", "req_6c1f0a"),
    ("openai-processing-ms", "412"),
    ("x-ratelimit-limit-requests", "10000"),
    ("x-ratelimit-remaining-requests", "9998"),
    ("x-ratelimit-reset-tokens", "3ms"),
    ("anthropic-ratelimit-input-tokens-remaining", "1998200"),
    ("anthropic-ratelimit-input-tokens-limit", "2000000"),
    ("retry-after", "1"),
    ("cf-ray", "7bc4612476c0efec-IAD"),
]


def _events(text: str, call_args: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        event = {"id": "chatcmpl-1", "model": "gpt-x", "choices": [choice]}
        return b"data: " + json.dumps(event).encode() + b"\n\n"

    call = {"index": 0, "id": "call_1", "type": "function"}
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": (" " if n else "") + w}) for n, w in enumerate(text.split(" "))),
        chunk({"tool_calls": [{**call, "function": {"name": "read", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": call_args}}]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


def _record(tmp_path: Path, chunks: list[bytes], status: int = 200) -> Exchange:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=PROVIDER_HEADERS, content=iter(chunks))

    tmp_path.mkdir(exist_ok=True)
    tape = tmp_path / "t.tape"
    with open_session(tape, SessionStarted(session_id=SID, started_at=0.0)) as writer:
        client = recording_client(
            writer, real=httpx.MockTransport(handler), redactor=Redactor(values=[SECRET])
        )
        with client, client.stream("POST", CHAT_URL, json={"model": "gpt-x"}) as response:
            response.read()
    (session,) = TapeReader(tape).sessions()
    (recorded,) = [e for e in session.events if isinstance(e, Exchange)]
    return recorded


def test_a_recorded_stream_keeps_its_message_and_the_fold_reads_it_not_the_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _record(tmp_path, _events("I will read it", '{"p": 1}'))
    assert recorded.response is not None and recorded.response.assembled is not None
    parsed = fold([SessionStarted(session_id=SID, started_at=0.0), recorded])

    streams: list[bytes] = []
    for api, adapter in _apis._ADAPTERS.items():
        real = adapter.read_stream_bytes

        def counted(call: Any, body: bytes, real: Any = real) -> Any:
            streams.append(body)
            return real(call, body)

        monkeypatch.setitem(_apis._ADAPTERS, api, attrs.evolve(adapter, read_stream_bytes=counted))
    header = SessionStarted(session_id=SID, started_at=0.0)
    (turn,) = fold([header, recorded]).turns
    assert streams == []  # read from the assembled message
    assert turn.call == parsed.turns[0].call
    assert turn.call.output_text == "I will read it" and turn.call.tool_calls[0].name == "read"
    # What the chunks say, parsed, is the same call (a copy given the chunks as a tuple
    # holds no assembled message).
    chunks = recorded.response.chunks
    bare = attrs.evolve(recorded, response=attrs.evolve(recorded.response, chunks=chunks))
    assert bare.response is not None and bare.response.assembled is None
    assert fold([header, bare]).turns[0].call == turn.call
    assert len(streams) == 1


def test_a_copy_with_other_chunks_or_a_message_of_other_adapters_is_parsed(
    tmp_path: Path,
) -> None:
    recorded = _record(tmp_path, _events("I will read it", '{"p": 1}'))
    assert recorded.response is not None and recorded.response.assembled is not None
    header = SessionStarted(session_id=SID, started_at=0.0)
    other = _events("Something else entirely", '{"p": 2}')
    changed = attrs.evolve(
        recorded,
        response=attrs.evolve(
            recorded.response, chunks=tuple(Chunk(at=0.0, data=c) for c in other)
        ),
    )
    (turn,) = fold([header, changed]).turns
    assert turn.call.output_text == "Something else entirely"
    older = attrs.evolve(recorded.response.assembled, version=_apis.ASSEMBLY - 1, output_text="x")
    stale = attrs.evolve(recorded, response=with_assembled(recorded.response, older))
    assert fold([header, stale]).turns[0].call.output_text == "I will read it"


def test_the_assembled_message_is_made_from_the_redacted_chunks(tmp_path: Path) -> None:
    recorded = _record(tmp_path, _events(f"the key is {SECRET} now", '{"p": 1}'))
    assert recorded.response is not None and recorded.response.assembled is not None
    assert SECRET not in recorded.response.assembled.output_text
    assert SECRET.encode() not in recorded.response.body
    redactor = Redactor(values=["read"])
    again = redactor.redact_exchange(recorded)
    assert again.response is not None and again.response.assembled is not None
    assert again.response.assembled.tool_calls[0][1] != "read"


def test_a_failed_or_unstreamed_response_has_no_assembled_message(tmp_path: Path) -> None:
    failed = _record(tmp_path / "a", _events("no", "{}"), status=429)
    assert failed.response is not None and failed.response.assembled is None
    # a failed response keeps every header: an SDK's retry reads some of them
    assert failed.response.headers == (*PROVIDER_HEADERS, ("transfer-encoding", "chunked"))


def test_a_successful_response_is_recorded_without_its_per_request_headers(
    tmp_path: Path,
) -> None:
    recorded = _record(tmp_path, _events("I will read it", "{}"))
    assert recorded.response is not None
    assert recorded.response.headers == (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("x-ratelimit-limit-requests", "10000"),
        ("anthropic-ratelimit-input-tokens-limit", "2000000"),
        ("retry-after", "1"),
        ("transfer-encoding", "chunked"),
    )


@pytest.mark.parametrize(
    ("name", "dropped"),
    [
        ("x-ratelimit-remaining-tokens", True),
        ("x-ratelimit-reset-requests", True),
        ("anthropic-ratelimit-output-tokens-reset", True),
        ("anthropic-ratelimit-requests-remaining", True),
        ("anthropic-ratelimit-requests-limit", False),
        ("x-ratelimit-limit-tokens", False),
        ("retry-after-ms", False),
        ("x-should-retry", False),
        ("content-length", False),
        ("set-cookie", True),
        ("request-id", True),
    ],
)
def test_the_volatile_header_rule(name: str, dropped: bool) -> None:
    assert volatile(name) is dropped
    assert kept_headers(200, ((name, "v"),)) == (() if dropped else ((name, "v"),))
    assert kept_headers(503, ((name, "v"),)) == ((name, "v"),)
