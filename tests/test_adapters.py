"""decode_call turns recorded exchanges of each model API into ModelCalls.

Wire fixtures are built the way each API sends them.  The fidelity tests
serve them from a real HTTP server on 127.0.0.1 to the real openai and
anthropic SDKs and check that the SDK and decode_call read the same call
from the same bytes; the table tests then cover streams split into many
fragments, usage details, content encodings and every kind of failure.
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest
import zstandard
from builders import exchange

from evaltape.recorder import (
    Chunk,
    Exchange,
    ModelCall,
    Request,
    Response,
    ToolCall,
    TransportError,
    Usage,
    decode_call,
)

JSON = (("content-type", "application/json"),)
SSE = (("content-type", "text/event-stream; charset=utf-8"),)


# -- wire fixtures -----------------------------------------------------------


def _sse(events: list[tuple[str, dict[str, Any]]], done: bool = False) -> list[bytes]:
    """One chunk per event; ``event:`` lines only when a name is given."""
    out = [
        (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(d).encode() + b"\n\n"
        for name, d in events
    ]
    return [*out, b"data: [DONE]\n\n"] if done else out


def _split(text: str, n: int) -> list[str]:
    """``text`` in pieces of at most ``n`` characters."""
    return [text[i : i + n] for i in range(0, len(text), n)]


ARGS_READ = '{"path": "src/main.py", "lines": [1, 200], "note": "caf\\u00e9 \\"quoted\\""}'
ARGS_GREP = '{"pattern": "def \\\\w+\\\\(", "recursive": true}'

CHAT_REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "ls", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "src/\nREADME.md"},
    ],
    "tools": [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("ls", "read", "grep")
    ],
}

CHAT_USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 90,
    "total_tokens": 1290,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0},
}


def chat_json() -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-9",
            "object": "chat.completion",
            "created": 1730000000,
            "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_1",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Reading two files.",
                        "refusal": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "read", "arguments": ARGS_READ},
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "grep", "arguments": ARGS_GREP},
                            },
                        ],
                    },
                    "logprobs": None,
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": CHAT_USAGE,
        }
    ).encode()


def chat_sse() -> list[bytes]:
    """Two parallel tool calls, arguments in 3-character fragments, interleaved."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, dict[str, Any]]:
        return "", {
            "id": "chatcmpl-9",
            "object": "chat.completion.chunk",
            "created": 1730000000,
            "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_1",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None,
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in _split("Reading two files.", 4)]
    for index, (cid, name) in enumerate((("call_1", "read"), ("call_2", "grep"))):
        head = {"index": index, "id": cid, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
    a, b = _split(ARGS_READ, 3), _split(ARGS_GREP, 3)
    for i in range(max(len(a), len(b))):
        for index, pieces in ((0, a), (1, b)):
            if i < len(pieces):
                fragment = {"index": index, "function": {"arguments": pieces[i]}}
                events.append(chunk({"tool_calls": [fragment]}))
    events.append(chunk({}, "tool_calls"))
    usage = {**chunk({})[1], "choices": [], "usage": CHAT_USAGE}
    return _sse([*events, ("", usage)], done=True)


RESPONSES_REQUEST: dict[str, Any] = {
    "model": "o4-mini",
    "instructions": "You are a coding agent.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Fix the bug."}]},
        {
            "type": "function_call",
            "id": "fc_0",
            "call_id": "call_0",
            "name": "ls",
            "arguments": "{}",
        },
        {"type": "function_call_output", "call_id": "call_0", "output": "src/\nREADME.md"},
    ],
    "tools": [
        {"type": "function", "name": n, "parameters": {"type": "object"}, "strict": False}
        for n in ("ls", "read", "grep")
    ],
}

RESPONSES_USAGE = {
    "input_tokens": 1500,
    "input_tokens_details": {"cached_tokens": 1280, "cache_write_tokens": 0},
    "output_tokens": 300,
    "output_tokens_details": {"reasoning_tokens": 256},
    "total_tokens": 1800,
}


def _responses_items() -> list[dict[str, Any]]:
    return [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Need to read main.py."}],
        },
        {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading two files.", "annotations": []}],
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "status": "completed",
            "call_id": "call_1",
            "name": "read",
            "arguments": ARGS_READ,
        },
        {
            "id": "fc_2",
            "type": "function_call",
            "status": "completed",
            "call_id": "call_2",
            "name": "grep",
            "arguments": ARGS_GREP,
        },
    ]


def _response_object(status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
    return {
        "id": "resp_7",
        "object": "response",
        "created_at": 1730000000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": "You are a coding agent.",
        "model": "o4-mini-2025-04-16",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


def responses_json() -> bytes:
    return json.dumps(_response_object("completed", _responses_items(), RESPONSES_USAGE)).encode()


def responses_sse(cut_after: int | None = None) -> list[bytes]:
    """The event sequence the API streams, arguments in 3-character deltas."""
    seq = iter(range(10_000))
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response_object("in_progress", [], None)}
    ]
    for index, item in enumerate(_responses_items()):
        kind = item["type"]
        at = {"item_id": item["id"], "output_index": index}
        if kind == "message":
            empty = {**item, "status": "in_progress", "content": []}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": empty}
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {"type": "response.content_part.added", **at, "content_index": 0, "part": part}
            )
            for piece in _split("Reading two files.", 4):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **at,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            done = {"content_index": 0, "text": "Reading two files.", "logprobs": []}
            events.append({"type": "response.output_text.done", **at, **done})
            part = item["content"][0]
            events.append(
                {"type": "response.content_part.done", **at, "content_index": 0, "part": part}
            )
        elif kind == "function_call":
            empty = {**item, "status": "in_progress", "arguments": ""}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": empty}
            )
            for piece in _split(item["arguments"], 3):
                events.append(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                )
            done = {"arguments": item["arguments"], "name": item["name"]}
            events.append({"type": "response.function_call_arguments.done", **at, **done})
        else:  # reasoning: its summary streams as one part
            empty = {**item, "summary": []}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": empty}
            )
            summary = item["summary"][0]
            at = {**at, "summary_index": 0}
            part = {"type": "summary_text", "text": ""}
            events.append({"type": "response.reasoning_summary_part.added", **at, "part": part})
            for piece in _split(summary["text"], 5):
                events.append(
                    {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
                )
            events.append({"type": "response.reasoning_summary_text.done", **at, **summary})
            events.append({"type": "response.reasoning_summary_part.done", **at, "part": summary})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    completed = _response_object("completed", _responses_items(), RESPONSES_USAGE)
    events.append({"type": "response.completed", "response": completed})
    numbered = [{**e, "sequence_number": next(seq)} for e in events]
    if cut_after is not None:
        numbered = numbered[:cut_after]
    return _sse([(e["type"], e) for e in numbered])


ANTHROPIC_REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 4096,
    "system": [{"type": "text", "text": "You are a coding agent."}],
    "messages": [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_0", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_0",
                    "content": [{"type": "text", "text": "src/\nREADME.md"}],
                },
                {"type": "text", "text": "Go on."},
            ],
        },
    ],
    "tools": [
        {"name": n, "input_schema": {"type": "object"}, "description": n}
        for n in ("ls", "read", "grep")
    ],
}

ANTHROPIC_USAGE = {
    "input_tokens": 40,
    "cache_creation_input_tokens": 200,
    "cache_read_input_tokens": 3000,
    "output_tokens": 180,
    "output_tokens_details": {"thinking_tokens": 120},
    "service_tier": "standard",
}


def anthropic_json() -> bytes:
    return json.dumps(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [
                {"type": "thinking", "thinking": "Need to read main.py.", "signature": "sig"},
                {"type": "text", "text": "Reading two files."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read",
                    "input": json.loads(ARGS_READ),
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "grep",
                    "input": json.loads(ARGS_GREP),
                },
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": ANTHROPIC_USAGE,
        }
    ).encode()


def anthropic_sse(cut_after: int | None = None) -> list[bytes]:
    start_usage = {**ANTHROPIC_USAGE, "output_tokens": 1}
    del start_usage["output_tokens_details"]
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]

    def block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if index == 0:
            events.append({"type": "ping"})
        for delta in deltas:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})

    think = [{"type": "thinking_delta", "thinking": p} for p in _split("Need to read main.py.", 5)]
    think.append({"type": "signature_delta", "signature": "sig"})
    block(0, {"type": "thinking", "thinking": "", "signature": ""}, think)
    text = [{"type": "text_delta", "text": p} for p in _split("Reading two files.", 4)]
    block(1, {"type": "text", "text": ""}, text)
    for index, (tid, name, args) in enumerate(
        (("toolu_1", "read", ARGS_READ), ("toolu_2", "grep", ARGS_GREP)), start=2
    ):
        parts = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_split(args, 3)]]
        block(index, {"type": "tool_use", "id": tid, "name": name, "input": {}}, parts)
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 180, "output_tokens_details": {"thinking_tokens": 120}},
        }
    )
    events.append({"type": "message_stop"})
    if cut_after is not None:
        events = events[:cut_after]
    return _sse([(e["type"], e) for e in events])


# -- a real server on 127.0.0.1 ------------------------------------------------


@attrs.define
class Canned:
    """The next response the server sends, and the request it got."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = JSON
    chunks: list[bytes] = attrs.Factory(list)
    got: Request | None = None


class _Handler(BaseHTTPRequestHandler):
    canned: Canned

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.canned.got = Request(
            method="POST",
            url=f"http://127.0.0.1:{self.server.server_address[1]}{self.path}",
            headers=tuple((k.lower(), v) for k, v in self.headers.items()),
            body=body,
        )
        self.send_response(self.canned.status)
        for k, v in self.canned.headers:
            self.send_header(k, v)
        self.send_header("content-length", str(sum(len(c) for c in self.canned.chunks)))
        self.send_header("connection", "close")
        self.end_headers()
        for c in self.canned.chunks:
            self.wfile.write(c)
            self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Canned]]:
    canned = Canned()
    handler = type("Handler", (_Handler,), {"canned": canned})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", canned
    httpd.shutdown()
    httpd.server_close()


def _serve(canned: Canned, headers: tuple[tuple[str, str], ...], chunks: list[bytes]) -> None:
    canned.status, canned.headers, canned.chunks, canned.got = 200, headers, chunks, None


def _recorded(canned: Canned, streamed: bool) -> Exchange:
    """The exchange a recording transport would have stored."""
    assert canned.got is not None
    chunks = tuple(Chunk(at=0.01 * i, data=c) for i, c in enumerate(canned.chunks))
    response = Response(
        status=canned.status,
        headers=tuple((k.lower(), v) for k, v in canned.headers),
        chunks=chunks,
        streamed=streamed,
    )
    return Exchange(at=0.0, duration=0.1, request=canned.got, response=response)


def _gzip(chunks: list[bytes]) -> list[bytes]:
    packed = gzip.compress(b"".join(chunks))
    return [packed[: len(packed) // 2], packed[len(packed) // 2 :]]


def _openai_calls(tool_calls: Any) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
        for c in tool_calls or ()
    )


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_read_like_the_openai_sdk(
    server: tuple[str, Canned], stream: bool, encoding: str
) -> None:
    openai = pytest.importorskip("openai")
    from openai.lib.streaming.chat import ChatCompletionStreamState

    base, canned = server
    chunks = chat_sse() if stream else [chat_json()]
    headers = SSE if stream else JSON
    if encoding == "gzip":
        chunks, headers = _gzip(chunks), (*headers, ("content-encoding", "gzip"))
    _serve(canned, headers, chunks)
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
    params = {k: v for k, v in CHAT_REQUEST.items()}
    if stream:
        state = ChatCompletionStreamState()
        for chunk in client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        ):
            state.handle_chunk(chunk)
        sdk = state.get_final_completion()
    else:
        sdk = client.chat.completions.create(**params)
    call = decode_call(_recorded(canned, stream))

    assert call is not None and not call.error
    message = sdk.choices[0].message
    assert call.api == "openai.chat" and call.streamed is stream
    assert (call.model_requested, call.model_responded) == (CHAT_REQUEST["model"], sdk.model)
    assert call.response_id == sdk.id
    assert call.output_text == message.content
    assert call.tool_calls == _openai_calls(message.tool_calls)
    assert [c.parsed_arguments() for c in call.tool_calls] == [
        json.loads(ARGS_READ),
        json.loads(ARGS_GREP),
    ]
    assert call.finish_reason == sdk.choices[0].finish_reason == "tool_calls"
    assert sdk.usage is not None
    assert call.usage == Usage(
        input_tokens=sdk.usage.prompt_tokens,
        output_tokens=sdk.usage.completion_tokens,
        cache_read_tokens=sdk.usage.prompt_tokens_details.cached_tokens,
        reasoning_tokens=sdk.usage.completion_tokens_details.reasoning_tokens,
    )
    assert call.tools_offered == ("ls", "read", "grep")
    assert [m.role for m in call.input_messages] == ["system", "user", "assistant", "tool"]
    assert call.input_messages[2].tool_calls == (ToolCall(id="call_0", name="ls", arguments="{}"),)
    assert call.input_messages[3].tool_call_id == "call_0"


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_responses_read_like_the_openai_sdk(server: tuple[str, Canned], stream: bool) -> None:
    openai = pytest.importorskip("openai")
    base, canned = server
    _serve(canned, SSE if stream else JSON, responses_sse() if stream else [responses_json()])
    client = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
    if stream:
        with client.responses.stream(**RESPONSES_REQUEST) as events:
            sdk = events.get_final_response()
    else:
        sdk = client.responses.create(**RESPONSES_REQUEST)
    call = decode_call(_recorded(canned, stream))

    assert call is not None and not call.error
    assert call.api == "openai.responses" and call.streamed is stream
    assert (call.model_responded, call.response_id) == (sdk.model, sdk.id)
    assert call.output_text == sdk.output_text
    sdk_calls = tuple(
        ToolCall(id=i.call_id, name=i.name, arguments=i.arguments)
        for i in sdk.output
        if i.type == "function_call"
    )
    assert call.tool_calls == sdk_calls and len(sdk_calls) == 2
    assert call.thinking == sdk.output[0].summary[0].text  # type: ignore[union-attr]
    assert call.finish_reason == sdk.status == "completed"
    assert sdk.usage is not None
    assert call.usage == Usage(
        input_tokens=sdk.usage.input_tokens,
        output_tokens=sdk.usage.output_tokens,
        cache_read_tokens=sdk.usage.input_tokens_details.cached_tokens,
        reasoning_tokens=sdk.usage.output_tokens_details.reasoning_tokens,
    )
    roles = [(m.role, m.tool_call_id) for m in call.input_messages]
    assert roles == [("system", ""), ("user", ""), ("assistant", ""), ("tool", "call_0")]
    assert call.input_messages[3].text == "src/\nREADME.md"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_read_like_the_anthropic_sdk(
    server: tuple[str, Canned], stream: bool
) -> None:
    anthropic = pytest.importorskip("anthropic")
    base, canned = server
    _serve(canned, SSE if stream else JSON, anthropic_sse() if stream else [anthropic_json()])
    client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    if stream:
        with client.messages.stream(**ANTHROPIC_REQUEST) as events:
            sdk = events.get_final_message()
    else:
        sdk = client.messages.create(**ANTHROPIC_REQUEST)
    call = decode_call(_recorded(canned, stream))

    assert call is not None and not call.error
    assert call.api == "anthropic.messages" and call.streamed is stream
    assert (call.model_responded, call.response_id) == (sdk.model, sdk.id)
    assert call.output_text == "".join(b.text for b in sdk.content if b.type == "text")
    assert call.thinking == "".join(b.thinking for b in sdk.content if b.type == "thinking")
    uses = [b for b in sdk.content if b.type == "tool_use"]
    assert [(c.id, c.name) for c in call.tool_calls] == [(b.id, b.name) for b in uses]
    assert [c.parsed_arguments() for c in call.tool_calls] == [b.input for b in uses]
    assert call.finish_reason == sdk.stop_reason == "tool_use"
    u = sdk.usage
    cached, written = u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0
    assert call.usage == Usage(
        input_tokens=u.input_tokens + cached + written,
        output_tokens=u.output_tokens,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=u.output_tokens_details.thinking_tokens,  # type: ignore[union-attr]
    )
    assert call.tools_offered == ("ls", "read", "grep")
    normalized = [(m.role, m.text, m.tool_call_id) for m in call.input_messages]
    assert normalized == [
        ("system", "You are a coding agent.", ""),
        ("user", "Fix the bug.", ""),
        ("assistant", "Listing.", ""),
        ("tool", "src/\nREADME.md", "toolu_0"),
        ("user", "Go on.", ""),
    ]
    assert call.input_messages[2].tool_calls == (ToolCall(id="toolu_0", name="ls", arguments="{}"),)


# -- table: encodings, failures, other traffic ---------------------------------

CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


_exchange = functools.partial(
    exchange,
    at=1.0,
    duration=0.5,
    request_headers=JSON,
    headers=JSON,
    chunk_at=0.0,
    chunk_every=0.01,
)
"""A call made at 1.0 for 0.5 s, JSON both ways unless told; ``chunks`` 10 ms apart."""


def _cut(chunks: list[bytes], keep: float) -> list[bytes]:
    """The stream's bytes cut at ``keep`` of their length (mid-event)."""
    data = b"".join(chunks)
    return [data[: int(len(data) * keep)]]


def _deflate(data: bytes, raw: bool) -> bytes:
    packer = zlib.compressobj(wbits=-15 if raw else 15)
    return packer.compress(data) + packer.flush()


CASES: list[tuple[str, Exchange, dict[str, Any]]] = [
    (
        "chat stream cut mid-event keeps the fragments that arrived",
        _exchange(CHAT_URL, CHAT_REQUEST, headers=SSE, chunks=_cut(chat_sse(), 0.6)),
        {"error": "stream cut short: it ended before data: [DONE]", "finish_reason": ""},
    ),
    (
        "chat body that is not JSON",
        _exchange(CHAT_URL, CHAT_REQUEST, chunks=[b'{"id": "chatcmpl-9", "choices": [']),
        {"error": "response body is not valid JSON: Expecting value at offset 33"},
    ),
    (
        "chat HTTP 400 carries the API's error",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            status=400,
            chunks=[
                b'{"error": {"message": "Invalid \'messages[3]\': unknown role.", '
                b'"type": "invalid_request_error", "param": "messages", "code": null}}'
            ],
        ),
        {
            "error": "HTTP 400: invalid_request_error: Invalid 'messages[3]': unknown role.",
            "status": 400,
            "usage": Usage.unknown(),
        },
    ),
    (
        "HTTP 502 with an HTML page",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            status=502,
            headers=(("content-type", "text/html"),),
            chunks=[b"<html>\n<body>Bad gateway</body>\n</html>"],
        ),
        {"error": "HTTP 502: <html> <body>Bad gateway</body> </html>"},
    ),
    (
        "anthropic HTTP 500",
        _exchange(
            ANTHROPIC_URL,
            ANTHROPIC_REQUEST,
            status=500,
            chunks=[
                b'{"type": "error", "error": {"type": "api_error", '
                b'"message": "Internal server error"}, "request_id": "req_1"}'
            ],
        ),
        {"error": "HTTP 500: api_error: Internal server error", "api": "anthropic.messages"},
    ),
    (
        "anthropic error event mid-stream",
        _exchange(
            ANTHROPIC_URL,
            ANTHROPIC_REQUEST,
            headers=SSE,
            chunks=[
                *anthropic_sse(cut_after=4),
                b"event: error\ndata: "
                b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
                b"\n\n",
            ],
        ),
        {"error": "stream error: overloaded_error: Overloaded", "thinking": "Need "},
    ),
    (
        "anthropic stream cut before message_stop",
        _exchange(
            ANTHROPIC_URL, ANTHROPIC_REQUEST, headers=SSE, chunks=anthropic_sse(cut_after=-1)
        ),
        {"error": "stream cut short: it ended before message_stop", "finish_reason": "tool_use"},
    ),
    (
        "responses stream cut before response.completed",
        _exchange(
            RESPONSES_URL, RESPONSES_REQUEST, headers=SSE, chunks=responses_sse(cut_after=-1)
        ),
        {
            "error": "stream cut short: it ended before response.completed",
            "output_text": "Reading two files.",
            "finish_reason": "",
            "usage": Usage.unknown(),
        },
    ),
    (
        "responses failed",
        _exchange(
            RESPONSES_URL,
            RESPONSES_REQUEST,
            chunks=[
                json.dumps(
                    {
                        **_response_object("failed", [], None),
                        "error": {"code": "server_error", "message": "The model crashed."},
                    }
                ).encode()
            ],
        ),
        {"error": "response failed: server_error: The model crashed.", "finish_reason": "failed"},
    ),
    (
        "chat body deflate-encoded (zlib wrapper)",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            headers=(*JSON, ("content-encoding", "deflate")),
            chunks=[_deflate(chat_json(), raw=False)],
        ),
        {"error": "", "output_text": "Reading two files.", "finish_reason": "tool_calls"},
    ),
    (
        "chat body raw-deflate-encoded",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            headers=(*JSON, ("content-encoding", "deflate")),
            chunks=[_deflate(chat_json(), raw=True)],
        ),
        {"error": "", "output_text": "Reading two files."},
    ),
    (
        "anthropic stream zstd-encoded",
        _exchange(
            ANTHROPIC_URL,
            ANTHROPIC_REQUEST,
            headers=(*SSE, ("content-encoding", "zstd")),
            chunks=[zstandard.ZstdCompressor().compress(b"".join(anthropic_sse()))],
        ),
        {"error": "", "output_text": "Reading two files.", "streamed": True},
    ),
    (
        "gzip body cut short",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            headers=(*SSE, ("content-encoding", "gzip")),
            chunks=_cut(_gzip(chat_sse()), 0.5),
        ),
        {"error": "gzip body is cut short"},
    ),
    (
        "unknown content-encoding",
        _exchange(
            CHAT_URL, CHAT_REQUEST, headers=(*JSON, ("content-encoding", "lzma")), chunks=[b"x"]
        ),
        {"error": "unknown content-encoding 'lzma'"},
    ),
    (
        "a malformed event inside a stream",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            headers=SSE,
            chunks=[*chat_sse()[:3], b"data: {not json}\n\n", *chat_sse()[3:]],
        ),
        {
            "error": "stream event 3 is not valid JSON: Expecting property name enclosed in "
            "double quotes at offset 1",
            "finish_reason": "tool_calls",
        },
    ),
    (
        "chat stream without a usage chunk",
        _exchange(
            CHAT_URL,
            {**CHAT_REQUEST, "stream": True},
            headers=SSE,
            chunks=[*chat_sse()[:-2], b"data: [DONE]\n\n"],
        ),
        {"error": "", "usage": Usage.unknown(), "finish_reason": "tool_calls"},
    ),
    (
        "transport failure mid-stream",
        _exchange(
            CHAT_URL,
            CHAT_REQUEST,
            headers=SSE,
            chunks=chat_sse()[:5],
            error=TransportError(type="ReadTimeout", message="timed out", after_chunks=5),
        ),
        {
            "error": "transport failed: ReadTimeout: timed out",
            "output_text": "".join(_split("Reading two files.", 4)[:4]),
        },
    ),
    (
        "no response at all",
        _exchange(
            RESPONSES_URL,
            RESPONSES_REQUEST,
            error=TransportError(type="ConnectError", message="connection refused"),
        ),
        {"error": "transport failed: ConnectError: connection refused", "status": None},
    ),
    (
        "a request body that is not JSON",
        _exchange(CHAT_URL, b"model=gpt-4o", chunks=[chat_json()]),
        {
            "error": "request body is not valid JSON: Expecting value at offset 0",
            "model_requested": "",
        },
    ),
    (
        "a proxy path, told by the body's shape",
        _exchange("http://127.0.0.1:9000/llm", CHAT_REQUEST, chunks=[chat_json()]),
        {"api": "openai.chat", "error": "", "finish_reason": "tool_calls"},
    ),
    (
        "a cloud path, told by anthropic_version",
        _exchange(
            "https://aiplatform.example/v1/models/claude:rawPredict",
            {**ANTHROPIC_REQUEST, "anthropic_version": "vertex-2023-10-16"},
            chunks=[anthropic_json()],
        ),
        {"api": "anthropic.messages", "error": "", "finish_reason": "tool_use"},
    ),
]


@pytest.mark.parametrize(("name", "exchange", "expected"), CASES, ids=[c[0] for c in CASES])
def test_decode_call(name: str, exchange: Exchange, expected: dict[str, Any]) -> None:
    call = decode_call(exchange)
    assert call is not None
    assert {k: getattr(call, k) for k in expected} == expected


def test_a_cut_stream_keeps_the_argument_prefix_it_received() -> None:
    for url, request, chunks in (
        (CHAT_URL, CHAT_REQUEST, _cut(chat_sse(), 0.6)),
        (RESPONSES_URL, RESPONSES_REQUEST, responses_sse(cut_after=30)),
        (ANTHROPIC_URL, ANTHROPIC_REQUEST, anthropic_sse(cut_after=25)),
    ):
        call = decode_call(_exchange(url, request, headers=SSE, chunks=chunks))
        assert call is not None and call.error.startswith("stream cut short")
        assert call.tool_calls, url
        first = call.tool_calls[0]
        assert first.name == "read" and 0 < len(first.arguments) < len(ARGS_READ)
        assert ARGS_READ.startswith(first.arguments)
        assert first.parsed_arguments() is None


@pytest.mark.parametrize(
    "exchange",
    [
        _exchange("https://api.openai.com/v1/models", b"", method="GET", chunks=[b"{}"]),
        _exchange(
            "https://api.openai.com/v1/embeddings",
            {"model": "text-embedding-3-small", "input": "hi"},
            chunks=[b'{"data": []}'],
        ),
        _exchange("https://api.openai.com/v1/responses/resp_7", b"", method="GET", chunks=[b"{}"]),
        _exchange("http://127.0.0.1:8000/upload", b"\x00\x01binary", chunks=[b"ok"]),
    ],
    ids=["list models", "embeddings", "retrieve a response", "binary upload"],
)
def test_other_traffic_is_not_a_model_call(exchange: Exchange) -> None:
    assert decode_call(exchange) is None


def test_brotli_without_a_decoder_is_an_error_not_a_crash() -> None:
    exchange = _exchange(
        CHAT_URL, CHAT_REQUEST, headers=(*JSON, ("content-encoding", "br")), chunks=[b"\x1b\x00"]
    )
    call = decode_call(exchange)
    assert call is not None
    try:
        import brotli  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        assert call.error == "br body needs the brotli package to decode"
    else:
        assert call.error.startswith("br body")


def test_usage_adds_up_and_unknown_is_contagious() -> None:
    a = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=80, reasoning_tokens=4)
    b = Usage(input_tokens=50, output_tokens=5, cache_write_tokens=50)
    total = a + b
    assert (total.input_tokens, total.output_tokens, total.total_tokens) == (150, 15, 165)
    assert (total.cache_read_tokens, total.cache_write_tokens, total.reasoning_tokens) == (
        80,
        50,
        4,
    )
    assert total.reported
    assert not (total + Usage.unknown()).reported
    assert (total + Usage.unknown()).input_tokens == 150


def test_tool_call_arguments_parse_or_give_none() -> None:
    assert ToolCall(id="1", name="f", arguments=ARGS_READ).parsed_arguments() == json.loads(
        ARGS_READ
    )
    assert ToolCall(id="1", name="f", arguments='{"path": "a').parsed_arguments() is None
    assert ToolCall(id="1", name="f", arguments="").parsed_arguments() is None


def test_model_call_defaults_say_usage_is_unknown() -> None:
    assert not ModelCall(api="unknown").usage.reported
