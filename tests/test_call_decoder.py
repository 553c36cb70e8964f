"""CallDecoder decodes a session's exchanges exactly as decode_call decodes each alone.

The decoder reuses the parsed and normalized messages a request shares with
the one before it; these tests feed it conversations whose bodies grow,
repeat, change earlier messages, change layout and break, and compare every
call with the one decode_call gives from scratch.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import JSON_HEADERS, exchange

from evaltape.recorder import SessionStarted, decode_call, fold
from evaltape.recorder._shared import CallDecoder

CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
RESPONSES = "https://api.openai.com/v1/responses"
REPLY = {"id": "r", "model": "m", "choices": [{"index": 0, "message": {"content": "ok"}}]}


def _chat(messages: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": messages, **extra}


def _turn(i: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} ü"},
    ]


def _growing(turns: int) -> list[list[dict[str, Any]]]:
    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
    ]
    out = []
    for i in range(turns):
        out.append(list(conversation))
        conversation += _turn(i)
    return out


def _check(url: str, bodies: list[bytes]) -> None:
    exchanges = [
        exchange(url, b, REPLY, at=float(i), headers=JSON_HEADERS) for i, b in enumerate(bodies)
    ]
    decoder = CallDecoder()
    together = [decoder.decode(e) for e in exchanges]
    alone = [decode_call(e) for e in exchanges]
    assert together == alone
    assert any(c is not None and c.input_messages for c in together)


def test_a_growing_conversation_decodes_as_each_request_alone() -> None:
    bodies = [json.dumps(_chat(m, tools=[{"type": "function"}])).encode() for m in _growing(6)]
    _check(CHAT, bodies)


def test_compact_and_non_ascii_bodies_decode_the_same() -> None:
    dump = {"separators": (",", ":"), "ensure_ascii": False}
    bodies = [json.dumps(_chat(m, stream=True), **dump).encode() for m in _growing(5)]  # type: ignore[arg-type]
    _check(CHAT, bodies)


def test_a_changed_earlier_message_is_read_again() -> None:
    conversations = _growing(4)
    edited = [dict(m) for m in conversations[-1]]
    edited[1]["content"] = "go, but differently"
    bodies = [json.dumps(_chat(m)).encode() for m in [*conversations, edited]]
    _check(CHAT, bodies)
    together = [
        CallDecoder().decode(exchange(CHAT, b, REPLY, headers=JSON_HEADERS)) for b in bodies
    ]
    last = together[-1]
    assert last is not None and last.input_messages[1].text == "go, but differently"


def test_a_repeated_body_and_a_shorter_one_decode_the_same() -> None:
    conversations = _growing(4)
    order = [conversations[3], conversations[3], conversations[1], conversations[2]]
    _check(CHAT, [json.dumps(_chat(m)).encode() for m in order])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (1, 12),  # a number that grows digits at the end of the shared text
        (1, 1.0),  # equal in Python, different JSON texts and tool arguments
        (1, True),
    ],
)
def test_values_that_differ_only_in_their_text_are_not_confused(before: Any, after: Any) -> None:
    def body(value: Any) -> bytes:
        call = {"id": "c", "function": {"name": "f", "arguments": value}}
        messages = [{"role": "assistant", "tool_calls": [call]}, value]
        return json.dumps(_chat(messages)).encode()

    _check(CHAT, [body(before), body(after)])
    together = [
        CallDecoder().decode(exchange(CHAT, body(v), REPLY, headers=JSON_HEADERS))
        for v in (before, after)
    ]
    assert together[-1] is not None
    assert together[-1].input_messages[0].tool_calls[0].arguments == json.dumps(after)


def test_broken_and_odd_bodies_decode_the_same() -> None:
    good = json.dumps(_chat(_growing(3)[-1])).encode()
    bodies = [
        good,
        good[:-5],  # cut short
        b"[1, 2]",  # not an object
        good,
        b'{"model": "m", "messages": [1, {"role": "user"}, "x"]}',
        b'{"model": "m", "messages": [{"role": "user"}], "messages": []}',  # duplicate key
        b'{"model": "m", "messages": [] , "x": 1} trailing',
        b'\xef\xbb\xbf{"model": "m", "messages": []}',  # UTF-8 byte order mark
        b'{"model": "m", "messages": "text"}',
        b"{}",
        good.replace(b'"go"', b'"\xff"'),  # not UTF-8
        good,
    ]
    _check(CHAT, bodies)


def test_anthropic_and_responses_conversations_decode_the_same() -> None:
    anthropic = []
    responses = []
    for conversation in _growing(5):
        messages = [
            {"role": "user", "content": [{"type": "text", "text": str(m)}]} for m in conversation
        ]
        anthropic.append(json.dumps({"model": "c", "system": "s", "messages": messages}).encode())
        items = [{"type": "message", "role": "user", "content": str(m)} for m in conversation]
        responses.append(json.dumps({"model": "o", "input": items}).encode())
    _check(ANTHROPIC, anthropic)
    _check(RESPONSES, responses)


def test_fold_gives_each_turn_the_call_decode_call_gives() -> None:
    header = SessionStarted(session_id="cd" * 8, started_at=0.0, case_id="c", model="m")
    exchanges = [
        exchange(CHAT, json.dumps(_chat(m)).encode(), REPLY, at=float(i), headers=JSON_HEADERS)
        for i, m in enumerate(_growing(5))
    ]
    session = fold([header, *exchanges])
    assert [t.call for t in session.turns] == [decode_call(e) for e in exchanges]
    assert len(session.turns[-1].call.input_messages) == 2 + 2 * 4


def test_a_call_answered_from_a_start_is_the_one_the_constructor_builds() -> None:
    """``answered`` builds a call from a start (its API, request side, status and
    streaming) once; it equals, hashes, prints and pickles as ``ModelCall(**fields)``,
    and a call that is already a ``ModelCall`` is evolved."""
    import pickle

    from evaltape.recorder.apis._model import (
        CallStart,
        Message,
        ModelCall,
        RequestSide,
        ToolCall,
        Usage,
        answered,
        blank,
    )

    fields: dict[str, Any] = {
        "model_responded": "m-1",
        "response_id": "r-1",
        "output_text": "done",
        "thinking": "hm",
        "tool_calls": (ToolCall(id="c", name="open_file", arguments="{}"),),
        "finish_reason": "stop",
        "usage": Usage(input_tokens=3, output_tokens=2),
        "error": "oops",
    }
    asked = ("m", (Message(role="user", text="hi"),), ("open_file",))
    for api in ("openai.chat", "openai.responses", "anthropic.messages"):
        built = answered(blank(api), **fields)
        made = ModelCall(api=api, **fields)
        assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
        assert pickle.loads(pickle.dumps(built)) == made
        start = CallStart(api=api, asked=RequestSide(lambda: asked), status=200, streamed=True)
        built = answered(start, **fields)
        made = ModelCall(
            api=api,
            model_requested="m",
            input_messages=asked[1],
            tools_offered=asked[2],
            status=200,
            streamed=True,
            **fields,
        )
        assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
        assert pickle.loads(pickle.dumps(built)) == made
        other = ModelCall(api=api, model_requested="asked", status=200)
        assert answered(other, **fields) == ModelCall(
            api=api, model_requested="asked", status=200, **fields
        )
    no_error = {k: v for k, v in fields.items() if k != "error"}
    assert answered(blank("openai.chat"), **no_error).error == ""


def test_a_reported_usage_is_the_one_the_constructor_builds() -> None:
    import pickle

    from evaltape.recorder.apis._model import Usage, reported_usage

    for cost in (None, 0.25):
        counts = {
            "input_tokens": 7,
            "output_tokens": 5,
            "cache_read_tokens": 3,
            "cache_write_tokens": 2,
            "reasoning_tokens": 1,
            "reported_cost": cost,
        }
        built = reported_usage(**counts)
        made = Usage(**counts)
        assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
        assert pickle.loads(pickle.dumps(built)) == made and built.reported
        assert built + made == made + made


def test_a_tool_call_built_slot_by_slot_is_the_one_the_constructor_builds() -> None:
    import pickle

    from evaltape.recorder.apis._model import ToolCall, tool_call

    built = tool_call("c-1", "open_file", '{"path": "a.py"}')
    made = ToolCall(id="c-1", name="open_file", arguments='{"path": "a.py"}')
    assert built == made and hash(built) == hash(made) and repr(built) == repr(made)
    assert pickle.loads(pickle.dumps(built)) == made
    assert built.parsed_arguments() == {"path": "a.py"}
