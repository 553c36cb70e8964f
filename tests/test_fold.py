"""fold derives the Session view (turns, tool calls and results, totals, errors) from events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaltape.recorder import (
    Chunk,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    Request,
    Response,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Status,
    TapeReader,
    ToolCall,
    TransportError,
    Usage,
    WorkspaceSnapshot,
    fold,
    open_session,
)

HEADER = SessionStarted(session_id="ab" * 8, started_at=1_700_000_000.0, case_id="c", model="m")
CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC = "https://api.anthropic.com/v1/messages"


def _json(
    url: str, at: float, request: dict[str, Any], response: dict[str, Any], status: int = 200
) -> Exchange:
    return Exchange(
        at=at,
        duration=0.5,
        request=Request(method="POST", url=url, body=json.dumps(request).encode()),
        response=Response(
            status=status,
            headers=(("content-type", "application/json"),),
            chunks=(Chunk(at=0.4, data=json.dumps(response).encode()),),
        ),
    )


def _chat_reply(
    content: str | None, calls: list[tuple[str, str, str]], usage: dict[str, Any] | None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _chat_session() -> list[Any]:
    """Two parallel calls answered in turn 2, one more call answered in turn 3, then a reply."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "fix it"},
    ]
    events: list[Any] = [HEADER]
    script = [
        ([("c1", "read", '{"path": "a.py"}'), ("c2", "grep", '{"pattern": "x"}')], None),
        ([("c3", "write", '{"path": "a.py"}')], None),
        ([], "Fixed."),
    ]
    results = {"c1": "print(1)\n", "c2": "a.py:1", "c3": "ok"}
    for turn, (calls, text) in enumerate(script):
        usage = _usage(1000 * (turn + 1), 10, cached=500 * turn)
        events.append(
            _json(
                CHAT,
                float(turn),
                {"model": "gpt-4o", "messages": list(messages)},
                _chat_reply(text, calls, usage),
            )
        )
        if calls:
            events.append(HarnessEvent(at=turn + 0.6, name="tool", fields=(("n", len(calls)),)))
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": _chat_reply(None, calls, None)["choices"][0]["message"][
                        "tool_calls"
                    ],
                }
            )
            messages += [
                {"role": "tool", "tool_call_id": i, "content": results[i]} for i, _, _ in calls
            ]
    events.append(WorkspaceSnapshot(at=3.0, files=(FileEntry(path="a.py", data=b"old"),)))
    events.append(
        WorkspaceSnapshot(
            at=3.1, files=(FileEntry(path="a.py", data=b"print(2)\n"),), omitted=("big.bin",)
        )
    )
    events.append(SessionEnded(at=3.5, status=Status.COMPLETED))
    return events


def test_tool_results_are_matched_to_their_calls() -> None:
    session = fold(_chat_session())
    got = [(r.turn, r.call.id, r.call.name, r.result) for r in session.tool_calls]
    assert got == [
        (0, "c1", "read", "print(1)\n"),
        (0, "c2", "grep", "a.py:1"),
        (1, "c3", "write", "ok"),
    ]
    assert session.tool_calls[0].call.parsed_arguments() == {"path": "a.py"}


def test_turns_reply_usage_workspace_and_duration() -> None:
    session = fold(_chat_session())
    assert [t.index for t in session.turns] == [0, 1, 2]
    assert [t.call.finish_reason for t in session.turns] == ["tool_calls", "tool_calls", "stop"]
    assert session.reply == "Fixed."
    assert session.usage == Usage(input_tokens=6000, output_tokens=30, cache_read_tokens=1500)
    assert session.workspace == (FileEntry(path="a.py", data=b"print(2)\n"),)
    assert session.workspace_omitted == ("big.bin",)
    assert session.end is not None and session.end.status is Status.COMPLETED
    assert session.duration == 3.5
    assert [h.name for h in session.harness] == ["tool", "tool"]
    assert session.errors == () and session.other_exchanges == ()
    assert session.session_id == HEADER.session_id


def test_a_result_before_its_call_is_not_its_result() -> None:
    # The request quotes a result for an id that only its own response then asks for.
    first = _json(
        CHAT,
        0.0,
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c9", "content": "stale"}]},
        _chat_reply(None, [("c9", "read", "{}")], None),
    )
    session = fold([HEADER, first])
    assert [(r.call.id, r.result) for r in session.tool_calls] == [("c9", None)]
    assert not session.usage.reported


def test_anthropic_tool_results_match_tool_use_ids() -> None:
    def reply(blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        usage = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": blocks,
            "stop_reason": stop,
            "usage": usage,
        }

    use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}
    asked = [{"role": "user", "content": "list"}]
    answered = [
        *asked,
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        },
    ]
    session = fold(
        [
            HEADER,
            _json(
                ANTHROPIC,
                0.0,
                {"model": "claude", "max_tokens": 9, "messages": asked},
                reply([use], "tool_use"),
            ),
            _json(
                ANTHROPIC,
                1.0,
                {"model": "claude", "max_tokens": 9, "messages": answered},
                reply([{"type": "text", "text": "One file."}], "end_turn"),
            ),
        ]
    )
    assert [(r.call, r.result) for r in session.tool_calls] == [
        (ToolCall(id="toolu_1", name="bash", arguments='{"cmd":"ls"}'), "a.py")
    ]
    assert session.reply == "One file."
    assert session.usage == Usage(input_tokens=200, output_tokens=10, cache_read_tokens=180)
    assert session.end is None and session.duration == 1.5


def test_errors_from_models_transport_and_runner_in_order() -> None:
    failed = _json(
        CHAT,
        0.0,
        {"model": "m", "messages": []},
        {"error": {"type": "server_error", "message": "boom"}},
        status=500,
    )
    cut = Exchange(
        at=1.0,
        duration=2.0,
        request=Request(method="POST", url=CHAT, body=b'{"model": "m", "messages": []}'),
        error=TransportError(type="ReadTimeout", message="timed out"),
    )
    other = Exchange(
        at=3.5,
        duration=0.1,
        request=Request(method="GET", url="https://example.org/"),
        error=TransportError(type="ConnectError", message="refused"),
    )
    session = fold(
        [
            HEADER,
            failed,
            cut,
            RunnerFact(at=3.0, fact=FactKind.NOTE, message="just a note"),
            other,
            RunnerFact(at=4.0, fact=FactKind.TIMEOUT, message="attempt passed 4s"),
            RunnerFact(at=4.1, fact=FactKind.INFRA_ERROR),
            SessionEnded(at=4.2, status=Status.TIMEOUT, reason="time limit"),
        ]
    )
    assert [(e.origin, e.message, e.turn) for e in session.errors] == [
        ("model", "HTTP 500: server_error: boom", 0),
        ("transport", "ReadTimeout: timed out", 1),
        ("transport", "ConnectError: refused", None),
        ("runner", "timeout: attempt passed 4s", None),
        ("runner", "infra_error", None),
    ]
    assert [e.at for e in session.errors] == [0.0, 1.0, 3.5, 4.0, 4.1]
    assert len(session.turns) == 2 and session.other_exchanges == (other,)
    assert session.reply == "" and not session.usage.reported


def test_a_session_without_model_traffic() -> None:
    page = Exchange(
        at=0.5,
        duration=0.25,
        request=Request(method="GET", url="https://example.org/"),
        response=Response(status=200, chunks=(Chunk(at=0.1, data=b"<html/>"),)),
    )
    session = fold([HEADER, page, HarnessEvent(at=1.0, name="tool")])
    assert session.turns == () and session.tool_calls == ()
    assert session.other_exchanges == (page,)
    assert session.reply == "" and session.usage == Usage() and session.usage.reported
    assert session.workspace == () and session.end is None
    assert session.duration == 1.0


def test_fold_of_a_tape_read_back_equals_fold_of_the_events(tmp_path: Path) -> None:
    events = _chat_session()
    ticks = iter([3.5])
    with open_session(tmp_path / "s.tape", HEADER, clock=lambda: next(ticks)) as tape:
        for event in events[1:-1]:
            tape.append(event)
    (recorded,) = TapeReader(tmp_path / "s.tape").sessions()
    assert fold(recorded.events) == fold(events)
    assert fold(iter(recorded.events)) == fold(events)


def test_events_must_start_with_the_session_header() -> None:
    with pytest.raises(ValueError, match="start with SessionStarted, not SessionEnded"):
        fold([SessionEnded(at=0.0, status=Status.COMPLETED)])
    with pytest.raises(ValueError, match="not nothing"):
        fold([])
