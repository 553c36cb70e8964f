"""Decoding a stream's events in one JSON parse gives exactly what parsing them one by one gives.

Every adapter decodes a streamed response's ``data:`` payloads as one JSON
array and falls back on parsing them one by one (which also words the
problem) when that batch is not provably the same.  These tests pin that the
two paths agree: on the values and problems of arbitrary payload lists,
including payloads built to fool a naive join, and on the ModelCall each
adapter reads from a corpus of streams with malformed events, ``[DONE]`` in
the middle, error events, non-UTF-8 bytes and cut-short bodies.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder.apis import _anthropic, _openai_chat, _openai_responses
from evaltape.recorder.apis._bodies import SseStream, decode_payloads, load_json_text, parse_sse
from evaltape.recorder.apis._model import ModelCall

TRICKY = [
    "[[1",
    "2]]",
    "1],[2",
    "1],[false,[[5",
    "6]]",
    '{"a":"},{"}',
    "{},{}",
    '{"a":1}  ',
    '  {"a":1}',
    '{"a":1} x',
    "",
    " ",
    "false",
    "true",
    "9007199254740993",
    '{"flag": false, "other": true, "n": 9007199254740993}',
    "false,false",
    '{"a":1},false,{"b":2}',
    "\ufeff{}",
    "\x00{}",
    "{\x00}",
    '{"s":"caf\u00e9 \\u00e9 \\ud83d\\ude00"}',
    '"just a string"',
    "[]",
    "null",
    "-0",
    "1e400",
    "[DONE]",
    '{"a":' * 3 + "1" + "}" * 3,
    '{"a":' * 3 + "1" + "}" * 2,
]
"""Payloads that are not one JSON text alone, hold a batch tag, or sit at the edges."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
payloads = st.lists(
    st.one_of(
        json_values.map(json.dumps),
        json_values.map(lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))),
        st.sampled_from(TRICKY),
        st.text(alphabet="{}[],:\"' \n01eflnrstu\\", max_size=12),
    ),
    max_size=12,
)


def _one_by_one(items: list[str]) -> list[tuple[Any, str]]:
    return [load_json_text(p, f"stream event {n}") for n, p in enumerate(items)]


def _paths(items: list[str]) -> tuple[list[tuple[Any, str]], list[tuple[Any, str]]]:
    batch, batch_problems = decode_payloads(items, "stream event")
    single, single_problems = decode_payloads(items, "stream event", batch=False)
    return (
        list(zip(batch, batch_problems or [""] * len(batch), strict=True)),
        list(zip(single, single_problems or [""] * len(single), strict=True)),
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(payloads)
def test_batch_decoding_equals_decoding_one_by_one(items: list[str]) -> None:
    batch, single = _paths(items)
    assert batch == single == _one_by_one(items)


@pytest.mark.parametrize(
    "items",
    [
        ["[1", "2]", "3,4"],  # a plain "[" + ",".join(...) + "]" reads three values here
        ["1],[false,[[5", "6]]", "7"],  # forged tags around a swallowed separator
        ["[[1", "2]]", "1],[2"],
        ['{"a":"},{"}', "{},{}", "{}"],
        ['{"ok": false}', '{"ok": true}', '{"n": 9007199254740993}'],  # every tag taken
        ["{}", "\ufeff{}"],
    ],
)
def test_payloads_that_fool_a_plain_join_are_read_one_by_one(items: list[str]) -> None:
    batch, single = _paths(items)
    assert batch == single == _one_by_one(items)


def test_a_plain_join_would_be_fooled() -> None:
    items = ["[1", "2]", "3,4"]
    assert json.loads("[" + ",".join(items) + "]") == [[1, 2], 3, 4]  # three values, all wrong
    values, problems = decode_payloads(items, "stream event")
    assert values == [None, None, None]
    assert problems is not None and all(problems)


def test_valid_payloads_holding_tag_spellings_still_decode() -> None:
    items = ['{"a": false}', '{"b": true}', '{"c": 9007199254740993}', '{"d": "false true"}']
    values, problems = decode_payloads(items, "stream event")
    assert problems is None
    assert values == [json.loads(p) for p in items]


# -- whole streams through each adapter ----------------------------------------


def _sse(events: list[tuple[str, str]], end: bytes = b"") -> bytes:
    out = b""
    for name, data in events:
        if name:
            out += f"event: {name}\n".encode()
        out += b"".join(b"data: " + line.encode() + b"\n" for line in data.split("\n"))
        out += b"\n"
    return out + end


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return json.dumps(body)


CHAT_OK = [
    ("", _chunk({"role": "assistant", "content": ""})),
    ("", _chunk({"content": "Hel"})),
    ("", _chunk({"content": "lo", "reasoning_content": "think"})),
    ("", _chunk({"refusal": "no"})),
    ("", _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "ls"}}]})),
    ("", _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]})),
    ("", _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "false}"}}]})),
    ("", _chunk({"function_call": {"name": "old", "arguments": "{}"}})),
    ("", _chunk({}, "tool_calls")),
    ("", json.dumps({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 3}})),
]
DONE = [("", "[DONE]")]

CHAT_STREAMS = {
    "complete": _sse(CHAT_OK + DONE),
    "done in the middle": _sse(CHAT_OK[:4] + DONE + CHAT_OK[4:] + DONE),
    "done first": _sse(DONE + CHAT_OK),
    "malformed event": _sse([*CHAT_OK[:3], ("", "{not json"), *CHAT_OK[3:], *DONE]),
    "event with trailing text": _sse([*CHAT_OK[:3], ("", '{"a":1} x'), *CHAT_OK[3:], *DONE]),
    "array event": _sse([*CHAT_OK[:2], ("", "[1, 2]"), *DONE]),
    "split naive join": _sse([*CHAT_OK[:2], ("", "[[1"), ("", "2]]"), ("", "1],[2"), *DONE]),
    "error event": _sse([*CHAT_OK[:3], ("", '{"error": {"type": "overloaded", "message": "x"}}')]),
    "non-UTF-8 bytes": _sse(CHAT_OK[:3]) + b'data: {"id": "\xff\xfe"}\n\n' + _sse(DONE),
    "BOM event": _sse([*CHAT_OK[:2], ("", "\ufeff{}"), *DONE]),
    "multi-line data": _sse([*CHAT_OK[:2], ("", '{"id":\n"x"}'), *DONE]),
    "cut short": _sse(CHAT_OK[:5])[:-30],
    "no done": _sse(CHAT_OK),
    "CRLF line ends": _sse(CHAT_OK + DONE).replace(b"\n", b"\r\n"),
    "comments and ids": b": keep-alive\nid: 7\n" + _sse(CHAT_OK + DONE),
    "tag spellings": _sse([("", _chunk({"content": "false true 9007199254740993"})), *DONE]),
    "empty": b"",
}

ANTHROPIC_OK = [
    (
        "message_start",
        '{"type":"message_start","message":{"id":"m1","model":"claude",'
        '"usage":{"input_tokens":5,"output_tokens":1}}}',
    ),
    ("ping", '{"type": "ping"}'),
    (
        "content_block_start",
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    ),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
    ),
    (
        "content_block_start",
        '{"type":"content_block_start","index":1,'
        '"content_block":{"type":"tool_use","id":"t1","name":"ls","input":{}}}',
    ),
    (
        "content_block_delta",
        '{"type":"content_block_delta","index":1,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"a\\": true}"}}',
    ),
    (
        "message_delta",
        '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}',
    ),
    ("message_stop", '{"type":"message_stop"}'),
]

ANTHROPIC_STREAMS = {
    "complete": _sse(ANTHROPIC_OK),
    "bad ping": _sse([*ANTHROPIC_OK[:1], ("ping", "{nope"), *ANTHROPIC_OK[2:]]),
    "unparsable ping": _sse(  # an int json.loads refuses to convert: pings are never parsed
        [*ANTHROPIC_OK[:1], ("ping", '{"n": ' + "1" * 5000 + "}"), *ANTHROPIC_OK[2:]]
    ),
    "malformed event": _sse([*ANTHROPIC_OK[:3], ("content_block_delta", "{"), *ANTHROPIC_OK[3:]]),
    "error event": _sse(
        [*ANTHROPIC_OK[:3], ("error", '{"type":"error","error":{"type":"overloaded_error"}}')]
    ),
    "cut short": _sse(ANTHROPIC_OK[:4]),
    "non-UTF-8 bytes": _sse(ANTHROPIC_OK[:3]) + b'event: x\ndata: {"t": "\xc3"}\n\n',
}

RESPONSES_OK = [
    (
        "response.created",
        '{"type":"response.created","response":{"id":"r1","model":"gpt",'
        '"parallel_tool_calls":true}}',
    ),
    (
        "response.output_item.added",
        '{"type":"response.output_item.added","output_index":0,'
        '"item":{"type":"message","role":"assistant","content":[]}}',
    ),
    (
        "response.output_text.delta",
        '{"type":"response.output_text.delta","output_index":0,"delta":"Hi"}',
    ),
    (
        "response.completed",
        '{"type":"response.completed","response":{"id":"r1",'
        '"model":"gpt","status":"completed","output":[],"usage":{"input_tokens":2}}}',
    ),
]

RESPONSES_STREAMS = {
    "complete": _sse(RESPONSES_OK),
    "malformed event": _sse([*RESPONSES_OK[:2], ("x", "[[1"), ("x", "2]]"), *RESPONSES_OK[2:]]),
    "error event": _sse([*RESPONSES_OK[:2], ("error", '{"type":"error","message":"boom"}')]),
    "cut short": _sse(RESPONSES_OK[:3]),
    "done line": _sse([*RESPONSES_OK, ("", "[DONE]")]),
}

Reader = Callable[..., ModelCall]
CORPUS: list[tuple[str, Reader, str, bytes]] = [
    *((_openai_chat.API, _openai_chat.read_stream, k, v) for k, v in CHAT_STREAMS.items()),
    *((_anthropic.API, _anthropic.read_stream, k, v) for k, v in ANTHROPIC_STREAMS.items()),
    *(
        (_openai_responses.API, _openai_responses.read_stream, k, v)
        for k, v in RESPONSES_STREAMS.items()
    ),
]


@pytest.mark.parametrize(
    ("api", "read", "body"),
    [(a, r, b) for a, r, _, b in CORPUS],
    ids=[f"{a}: {k}" for a, _, k, _ in CORPUS],
)
def test_each_adapter_reads_the_same_call_either_way(api: str, read: Reader, body: bytes) -> None:
    stream = parse_sse(body)
    call = ModelCall(api=api)  # type: ignore[arg-type]
    assert read(call, stream) == read(call, stream, batch=False)


def test_the_corpus_covers_failures_and_successes() -> None:
    calls = {
        (api, name): read(ModelCall(api=api), parse_sse(body)) for api, read, name, body in CORPUS
    }  # type: ignore[arg-type]
    chat = _openai_chat.API
    assert calls[chat, "complete"].error == ""
    assert calls[chat, "complete"].output_text == "Hellono"
    assert calls[chat, "done in the middle"].output_text == "Hellono"
    assert calls[chat, "done in the middle"].tool_calls == ()
    assert calls[chat, "malformed event"].error.startswith("stream event 3 is not valid JSON")
    assert calls[chat, "split naive join"].error.startswith("stream event 2 is not valid JSON")
    assert calls[chat, "error event"].error == "stream error: overloaded: x"
    assert calls[chat, "tag spellings"].output_text == "false true 9007199254740993"
    assert calls[_anthropic.API, "bad ping"].error == ""
    assert calls[_anthropic.API, "unparsable ping"] == calls[_anthropic.API, "complete"]
    assert calls[_anthropic.API, "complete"].tool_calls[0].arguments == '{"a": true}'
    assert calls[_openai_responses.API, "malformed event"].error.startswith("stream event 2")


def test_events_view_matches_the_parallel_fields() -> None:
    stream: SseStream = parse_sse(ANTHROPIC_STREAMS["complete"])
    assert [(e.event, e.data) for e in stream.events] == list(
        zip(stream.names, stream.payloads, strict=True)
    )
    assert [name for name, _ in ANTHROPIC_OK] == list(stream.names)
