"""Adapter edge cases: legacy function_call beside tool_calls, JSON that Python cannot hold."""

from __future__ import annotations

import json

from evaltape.recorder import Chunk, Exchange, Request, Response, decode_call

URL = "http://127.0.0.1:8080/v1/chat/completions"
CALL = {"name": "read", "arguments": '{"path": "notes.txt"}'}


def _exchange(body: bytes, *, streamed: bool) -> Exchange:
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    content_type = "text/event-stream" if streamed else "application/json"
    return Exchange(
        at=0.0,
        duration=0.1,
        request=Request(method="POST", url=URL, body=request.encode()),
        response=Response(
            status=200,
            headers=(("content-type", content_type),),
            chunks=(Chunk(at=0.1, data=body),),
            streamed=streamed,
        ),
    )


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
    call = decode_call(_exchange(json.dumps(body).encode(), streamed=False))
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
    call = decode_call(_exchange(body, streamed=True))
    assert call is not None
    assert [(c.name, c.arguments) for c in call.tool_calls] == [("read", CALL["arguments"])]


def test_legacy_function_call_alone_still_counts() -> None:
    message = {"role": "assistant", "content": None, "function_call": CALL}
    body = {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
    }
    call = decode_call(_exchange(json.dumps(body).encode(), streamed=False))
    assert call is not None
    assert [c.name for c in call.tool_calls] == ["read"]


def test_json_python_cannot_hold_is_a_call_error_not_an_exception() -> None:
    from evaltape.recorder import SessionStarted, fold

    huge = "9" * 5000  # past Python's int-digits limit
    deep = "[" * 100_000 + "]" * 100_000  # past the recursion limit
    for body in (f'{{"id": "x", "n": {huge}}}', f'{{"id": "x", "n": {deep}}}'):
        plain = _exchange(body.encode(), streamed=False)
        stream = _exchange(f"data: {body}\n\ndata: [DONE]\n\n".encode(), streamed=True)
        for exchange in (plain, stream):
            call = decode_call(exchange)
            assert call is not None and call.error, body[:20]
        header = SessionStarted(session_id="ab" * 8, started_at=0.0)
        session = fold([header, plain, stream])
        assert len(session.turns) == 2
