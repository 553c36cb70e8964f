"""Flip causes: digests of real folded sessions, and the cause table on built attempts."""

from __future__ import annotations

from typing import Any

import pytest
from builders import JSON_HEADERS, exchange

from evaltape.recorder import (
    Event,
    Exchange,
    FileEntry,
    Session,
    SessionEnded,
    SessionStarted,
    Status,
    WorkspaceSnapshot,
    fold,
)
from evaltape.scoring import AttemptResult, Verdict
from evaltape.scoring.verdicts._flips import (
    FlipCause,
    effects_digest,
    flip_cause,
    flips_to_json,
    outputs_digest,
    render_flips,
    summarize_flips,
)

CHAT = "https://api.openai.com/v1/chat/completions"


def _chat_turn(at: float, request: dict[str, Any], message: dict[str, Any], rid: str) -> Exchange:
    """A Chat Completions call sent at ``at`` whose answer, ``rid``, is ``message``."""
    response = {
        "id": rid,
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return exchange(
        CHAT, request, response, at=at, duration=0.25 + at, chunk_at=0.2, headers=JSON_HEADERS
    )


def session(
    *,
    arguments: str = '{"path": "a.txt"}',
    result: str = "hello",
    reply: str = "the file says hello",
    files: tuple[tuple[str, bytes], ...] = (("a.txt", b"hello"),),
    status: Status = Status.COMPLETED,
    call_id: str = "call_1",
    at: float = 0.0,
    session_id: str = "ab" * 8,
) -> Session:
    """Two turns: a ``read`` tool call, its result sent back, then a reply."""
    user = {"role": "user", "content": "read a.txt"}
    call = {"id": call_id, "type": "function", "function": {"name": "read", "arguments": arguments}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    events: list[Event] = [
        SessionStarted(session_id=session_id, started_at=1_700_000_000.0 + at, case_id="c"),
        _chat_turn(at + 0.1, {"model": "m", "messages": [user]}, asked, f"r1-{session_id}"),
        _chat_turn(
            at + 0.9,
            {
                "model": "m",
                "messages": [
                    user,
                    asked,
                    {"role": "tool", "tool_call_id": call_id, "content": result},
                ],
            },
            {"role": "assistant", "content": reply},
            f"r2-{session_id}",
        ),
        WorkspaceSnapshot(at=at + 1.0, files=tuple(FileEntry(path=p, data=d) for p, d in files)),
        SessionEnded(at=at + 1.1, status=status),
    ]
    return fold(events)


def test_a_session_folds_into_the_turns_the_digests_read() -> None:
    s = session()
    assert [c.call.name for c in s.tool_calls] == ["read"]
    assert s.tool_calls[0].result == "hello"
    assert s.reply == "the file says hello"


def test_ids_timings_and_argument_spacing_do_not_change_either_digest() -> None:
    base = session()
    other = session(
        call_id="call_zz", at=7.5, session_id="cd" * 8, arguments='{ "path" :  "a.txt" }'
    )
    assert outputs_digest(other) == outputs_digest(base)
    assert effects_digest(other) == effects_digest(base)


@pytest.mark.parametrize(
    ("change", "outputs_move", "effects_move"),
    [
        ({"arguments": '{"path": "b.txt"}'}, True, False),
        ({"reply": "it says hi"}, True, False),
        ({"arguments": '{"path": "a.txt"'}, True, False),  # cut short: compared as text
        ({"result": "HELLO"}, False, True),
        ({"files": (("a.txt", b"hello!"),)}, False, True),
        ({"files": ()}, False, True),
        ({"status": Status.FAILED}, False, True),
    ],
)
def test_what_moves_which_digest(
    change: dict[str, Any], outputs_move: bool, effects_move: bool
) -> None:
    base, changed = session(), session(**change)
    assert (outputs_digest(changed) != outputs_digest(base)) is outputs_move
    assert (effects_digest(changed) != effects_digest(base)) is effects_move


def attempt(
    verdict: Verdict,
    outputs: str = "",
    effects: str = "",
    *,
    judge: float | None = None,
    tainted: bool = False,
    n: int = 0,
    case: str = "c",
) -> AttemptResult:
    return AttemptResult(
        case_id=case,
        suite="s",
        model="m",
        attempt=n,
        verdict=verdict,
        outputs_digest=outputs,
        effects_digest=effects,
        judge_score=judge,
        tainted=tainted,
    )


P, F, E = Verdict.PASSED, Verdict.FAILED, Verdict.ERROR

CAUSES = [
    ("different outputs", [attempt(P, "x", "e1"), attempt(F, "y", "e2")], FlipCause.MODEL),
    (
        "outputs differ, effects equal",
        [attempt(P, "x", "e"), attempt(F, "y", "e"), attempt(P, "x", "e")],
        FlipCause.MODEL,
    ),
    (
        "the judge ruled twice",
        [attempt(P, "x", "e", judge=4), attempt(F, "x", "e", judge=1)],
        FlipCause.JUDGE,
    ),
    ("one side unscored", [attempt(P, "x", "e", judge=4), attempt(F, "x", "e")], FlipCause.JUDGE),
    (
        "same outputs, other effects",
        [attempt(P, "x", "e1"), attempt(F, "x", "e2")],
        FlipCause.HARNESS,
    ),
    (
        "a shared output outweighs a different one",
        [attempt(P, "x", "e1"), attempt(F, "y", "e2"), attempt(F, "x", "e3")],
        FlipCause.HARNESS,
    ),
    (
        "an error among passes",
        [attempt(P, "x", "e"), attempt(P, "x", "e"), attempt(E)],
        FlipCause.INFRA,
    ),
    (
        "a tainted failure",
        [attempt(P, "x", "e"), attempt(F, "y", "f", tainted=True)],
        FlipCause.INFRA,
    ),
    (
        "clean attempts disagree beside an error",
        [attempt(P, "x", "e"), attempt(F, "y", "f"), attempt(E)],
        FlipCause.MODEL,
    ),
    ("no digests (an older record)", [attempt(P), attempt(F)], FlipCause.UNATTRIBUTED),
    (
        "equal evidence, no judge",
        [attempt(P, "x", "e"), attempt(F, "x", "e")],
        FlipCause.UNATTRIBUTED,
    ),
]


@pytest.mark.parametrize(
    ("attempts", "cause"), [(a, c) for _, a, c in CAUSES], ids=[n for n, _, _ in CAUSES]
)
def test_the_cause_of_a_split(attempts: list[AttemptResult], cause: FlipCause) -> None:
    assert flip_cause(attempts) is cause


def test_a_run_summary_counts_agreement_and_explains_each_split() -> None:
    attempts = [
        attempt(P, "a", "e", case="steady", n=0),
        attempt(P, "a", "e", case="steady", n=1),
        attempt(F, "b", "e", case="stuck", n=0),
        attempt(F, "b", "e", case="stuck", n=1),
        attempt(E, case="down", n=0),
        attempt(Verdict.SKIPPED, case="down", n=1),
        attempt(P, "x", "e", case="coin", n=0),
        attempt(F, "y", "e", case="coin", n=1),
        attempt(P, "x", "e", case="coin", n=2),
        attempt(Verdict.SKIPPED, case="never"),
    ]
    summary = summarize_flips(attempts)
    assert (summary.cases, summary.all_passed, summary.all_failed) == (4, 1, 2)
    (coin,) = summary.flipped
    assert (coin.case_id, coin.passed, coin.total, coin.trajectories) == ("coin", 2, 3, 2)
    assert coin.cause is FlipCause.MODEL
    assert render_flips(summary) == [
        "repeats: 4 case(s): 1 all passed, 2 all failed, 1 flipped",
        "flipped s/coin [m]: 2/3 passed, 2 distinct trajectories, cause model "
        "(the model's outputs differ)",
    ]
    data = flips_to_json(summary)
    assert data["causes"] == {
        "model": 1,
        "judge": 0,
        "harness": 0,
        "infra": 0,
        "unattributed": 0,
    }
    assert data["flipped_cases"] == [
        {
            "suite": "s",
            "case": "coin",
            "model": "m",
            "passed": 2,
            "total": 3,
            "distinct_trajectories": 2,
            "cause": "model",
        }
    ]


def test_a_harness_split_says_to_replay() -> None:
    summary = summarize_flips([attempt(P, "x", "e1"), attempt(F, "x", "e2", n=1)])
    assert "replay the tapes to confirm" in render_flips(summary)[1]
