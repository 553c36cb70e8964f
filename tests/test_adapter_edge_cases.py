"""A legacy function_call sent beside tool_calls (as llama.cpp does) is not a second call."""

from __future__ import annotations

import json

from recorder import Chunk, Exchange, Request, Response, decode_call

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
