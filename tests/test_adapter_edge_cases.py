"""Adapter edge cases: legacy function_call beside tool_calls, JSON that Python cannot hold."""

from __future__ import annotations

import functools
import json

from builders import JSON_HEADERS, exchange

from evaltape.recorder import decode_call

URL = "http://127.0.0.1:8080/v1/chat/completions"
CALL = {"name": "read", "arguments": '{"path": "notes.txt"}'}


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
_answered = functools.partial(exchange, URL, REQUEST, headers=JSON_HEADERS, chunk_at=0.1)
"""The request answered by a body in one JSON chunk."""
_streamed = functools.partial(
    exchange,
    URL,
    REQUEST,
    headers=(("content-type", "text/event-stream"),),
    chunk_at=0.1,
    streamed=True,
)
"""The request answered by a body in one event-stream chunk."""


def test_plain_response_with_both_fields_has_one_call() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": CALL}],
        "function_call": CALL,
    }
    body = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    call = decode_call(_answered(json.dumps(body).encode()))
    assert call is not None
    assert [c.name for c in call.tool_calls] == ["read"]


def test_streamed_delta_with_both_fields_has_one_call() -> None:
    delta = {
        "role": "assistant",
        "tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": CALL}],
        "function_call": CALL,
    }
    chunk = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}],
    }
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    call = decode_call(_streamed(body))
    assert call is not None
    assert [(c.name, c.arguments) for c in call.tool_calls] == [("read", CALL["arguments"])]


def test_legacy_function_call_alone_still_counts() -> None:
    message = {"role": "assistant", "content": None, "function_call": CALL}
    body = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
    }
    call = decode_call(_answered(json.dumps(body).encode()))
    assert call is not None
    assert [c.name for c in call.tool_calls] == ["read"]


def test_json_python_cannot_hold_is_a_call_error_not_an_exception() -> None:
    from evaltape.recorder import SessionStarted, fold

    huge = "9" * 5000  # past Python's int-digits limit
    deep = "[" * 100_000 + "]" * 100_000  # past the recursion limit
    for body in (f'{{"id": "x", "n": {huge}}}', f'{{"id": "x", "n": {deep}}}'):
        plain = _answered(body.encode())
        stream = _streamed(f"data: {body}\n\ndata: [DONE]\n\n".encode())
        for sent in (plain, stream):
            call = decode_call(sent)
            assert call is not None and call.error, body[:20]
        header = SessionStarted(session_id="ab" * 8, started_at=0.0)
        session = fold([header, plain, stream])
        assert len(session.turns) == 2
