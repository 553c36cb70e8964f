"""A fold reads each call's request side (the conversation, the tools offered) and each
tool call's result only when one of them is first asked for.

Scoring tool calls by name and arguments, the answer and the usage never asks, so a
rescore leaves the requests unnormalized.  Whatever asks gets what reading them at
once gives: the same values in any order, from any thread, through pickling,
copying and ``attrs.evolve``.
"""

from __future__ import annotations

import copy
import pickle
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import attrs
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder import (
    Event,
    Message,
    ModelCall,
    RequestSide,
    Session,
    TapeReader,
    Usage,
    fold,
)
from evaltape.scoring import Case, make_scorer
from evaltape.scoring.cases._frozen import FrozenMap

ROOT = Path(__file__).resolve().parents[1]
REQUEST_SIDE = ("model_requested", "input_messages", "tools_offered")
"""A call's fields that only its request says."""


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Sequence[Event]:
    sys.path.insert(0, str(ROOT))
    from evals.perf import sdk_traffic

    tape = tmp_path_factory.mktemp("lazy") / "s.tape"
    with sdk_traffic.ModelServer() as server:
        sdk_traffic.record_session(server, tape, "anthropic", 2, 8, "mixed", "00000000000000e1")
    (session,) = TapeReader(tape).sessions()
    return session.events


def _eager(events: Sequence[Event]) -> Session:
    """The fold with every lazy field read, in order."""
    session = fold(events)
    for turn in session.turns:
        for name in REQUEST_SIDE:
            getattr(turn.call, name)
    for record in session.tool_calls:
        _ = record.result
    return session


def _unread(call: ModelCall) -> bool:
    side = call._model_requested
    return isinstance(side, RequestSide) and not side.is_found


@pytest.mark.slow
def test_scoring_a_trajectory_reads_no_request(events: Sequence[Event]) -> None:
    case = Case(
        suite="s",
        path="s.jsonl",
        line=1,
        id="c",
        prompt="p",
        failure_category="code-edit",
        why_model_backed="test",
        fingerprint="",
        forbid_tools=("delete_file",),
        expect_max_turns=20,
        expect_tool="open_file",
        expect_in_args=FrozenMap.of({"path": "lib/"}),
    )
    session = fold(events)
    score = make_scorer()(case, session)
    assert score.checks and session.tool_calls
    assert all(_unread(turn.call) for turn in session.turns)
    # and what a request says is still there when asked for
    assert session.turns[-1].call.input_messages == _eager(events).turns[-1].call.input_messages
    assert not _unread(session.turns[-1].call)


def test_request_sides_read_in_any_order_equal_reading_them_in_order(
    events: Sequence[Event],
) -> None:
    expected = _eager(events)
    session = fold(events)
    for turn in reversed(session.turns):  # the last first: the earlier ones are read on the way
        assert turn.call.input_messages == expected.turns[turn.index].call.input_messages
    assert [r.result for r in reversed(session.tool_calls)] == [
        r.result for r in reversed(expected.tool_calls)
    ]
    assert any(r.result for r in session.tool_calls)
    assert session == expected


def test_threads_reading_one_session_at_once_see_the_same_calls(events: Sequence[Event]) -> None:
    expected = _eager(events)
    session = fold(events)
    seen: list[object] = []

    def read(order: Sequence[int]) -> None:
        seen.append([session.turns[i].call for i in order])

    n = len(session.turns)
    threads = [
        threading.Thread(target=read, args=(order,))
        for order in (range(n), range(n - 1, -1, -1), range(0, n, 2))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert session.turns == expected.turns


@pytest.mark.parametrize(
    "reread",
    [
        lambda s: pickle.loads(pickle.dumps(s)),
        copy.deepcopy,
        lambda s: attrs.evolve(s, turns=tuple(msgspec.structs.replace(t) for t in s.turns)),
        lambda s: attrs.evolve(
            s,
            turns=tuple(
                msgspec.structs.replace(t, call=attrs.evolve(t.call, error="x")) for t in s.turns
            ),
        ),
    ],
    ids=["pickle", "deepcopy", "evolve", "evolve a field"],
)
def test_a_folded_session_copies_with_its_request_sides(
    events: Sequence[Event], reread: object
) -> None:
    expected = _eager(events)
    copied = reread(fold(events))  # type: ignore[operator]
    for turn, want in zip(copied.turns, expected.turns, strict=True):
        assert turn.call.input_messages == want.call.input_messages
        assert turn.call.tools_offered == want.call.tools_offered
        assert turn.call.model_requested == want.call.model_requested
    assert [r.result for r in copied.tool_calls] == [r.result for r in expected.tool_calls]


def test_a_call_that_was_never_folded_has_no_pending_request() -> None:
    call = ModelCall(api="openai.chat", model_requested="m")
    assert not _unread(call) and call.input_messages == ()
    with pytest.raises(AttributeError):
        call.no_such_field  # type: ignore[attr-defined]  # noqa: B018


def test_calls_without_a_response_are_each_their_own() -> None:
    """A call that got no response (the transport failed) is built from its start like
    any other, with what the exchange says."""
    from evaltape.recorder import Exchange, Request, SessionStarted, TransportError

    def failed(n: int) -> Exchange:
        return Exchange(
            at=float(n),
            duration=0.1,
            request=Request(
                method="POST",
                url="http://127.0.0.1:9/v1/chat/completions",
                body=b'{"model":"m","messages":[{"role":"user","content":"hi"}]}',
            ),
            error=TransportError(type="ConnectError", message=f"refused {n}"),
        )

    session = fold(
        [SessionStarted(session_id="00000000000000e2", started_at=0.0), failed(1), failed(2)]
    )
    first, second = (turn.call for turn in session.turns)
    assert first.error == "transport failed: ConnectError: refused 1"
    assert second.error == "transport failed: ConnectError: refused 2"
    assert first.model_requested == "m" and first.status is None and not first.streamed
    assert first.input_messages == (Message(role="user", text="hi"),)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(
            Usage,
            input_tokens=st.integers(0, 10**6),
            output_tokens=st.integers(0, 10**6),
            cache_read_tokens=st.integers(0, 10**6),
            cache_write_tokens=st.integers(0, 10**6),
            reasoning_tokens=st.integers(0, 10**6),
            reported=st.booleans(),
            reported_cost=st.none() | st.floats(0, 10),
        ),
        max_size=6,
    )
)
def test_a_sessions_usage_is_the_turns_added_one_by_one(usages: list[Usage]) -> None:
    from evaltape.recorder.apis._model import total_usage

    expected = Usage()
    for usage in usages:
        expected += usage
    assert total_usage(usages) == expected


def test_turns_and_tool_call_records_a_fold_builds_are_the_ones_their_constructors_build(
    events: Sequence[Event],
) -> None:
    """The fold's turns and tool call records equal, hash, print and pickle as the ones
    their constructors build from the same values; a record's result is found when first
    asked for, and a record built with a result holds it as given."""
    from evaltape.recorder import ToolCallRecord, Turn

    session = fold(events)
    records = session.tool_calls
    assert records and not any(r._result.found for r in records)  # left to be found
    for record in records:
        made = ToolCallRecord(turn=record.turn, call=record.call, result=record.result)
        assert record == made and hash(record) == hash(made) and repr(record) == repr(made)
        assert pickle.loads(pickle.dumps(record)) == made
    for n, turn in enumerate(session.turns):
        made_turn = Turn(index=n, exchange=turn.exchange, call=turn.call)
        assert turn == made_turn and hash(turn) == hash(made_turn) and repr(turn) == repr(made_turn)
        assert pickle.loads(pickle.dumps(turn)) == made_turn
