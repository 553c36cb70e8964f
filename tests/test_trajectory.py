"""Trajectory rules: each rule, their fixed order, and how expectInArgs compares values."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from builders import JSON_HEADERS, exchange

from evaltape.recorder import (
    Event,
    Exchange,
    FactKind,
    HarnessEvent,
    Request,
    RunnerFact,
    Session,
    SessionEnded,
    SessionStarted,
    Status,
    TransportError,
    fold,
)
from evaltape.scoring import Case, Check, Score, Scorer, load_suites, make_scorer, score_session
from evaltape.scoring.cases._frozen import FrozenMap
from evaltape.scoring.checks._trajectory import args_mismatch, trajectory_checks

CHAT = "https://api.openai.com/v1/chat/completions"
HEADER = SessionStarted(session_id="cd" * 8, started_at=1_700_000_000.0, case_id="c", model="m")
BASE: dict[str, Any] = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("grep", "read", "write", "edit", "bash")
]

Call = tuple[str, str]
"""A tool call as (name, arguments JSON text exactly as the model sent it)."""


def _case(tmp_path: Path, **fields: Any) -> Case:
    """Load one case through the real loader, so it is as valid as a suite file's."""
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir(exist_ok=True)
    (rubrics / "quality.md").write_text("# quality\n", encoding="utf-8")
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps({**BASE, **fields}) + "\n", encoding="utf-8")
    (suite,) = load_suites([path], rubrics_dir=rubrics)
    return suite.cases[0]


def _chat_turn(
    index: int, calls: Sequence[Call], *, duration: float = 0.5, status: int = 200
) -> Exchange:
    """One chat-completions call whose response asks for ``calls`` (or answers in text)."""
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else "done"}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{n}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for n, (name, arguments) in enumerate(calls)
        ]
    body: dict[str, Any] = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
    if status >= 400:
        body = {"error": {"type": "server_error", "message": "overloaded"}}
    request = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "p"}],
        "tools": TOOLS,
    }
    return exchange(
        CHAT,
        request,
        body,
        at=float(index),
        duration=duration,
        status=status,
        headers=JSON_HEADERS,
        chunk_at=duration,
    )


def _session(*turns: Sequence[Call], extra: Sequence[Event] = ()) -> Session:
    """A completed session: one model turn per entry of ``turns``, then a text reply."""
    events: list[Event] = [HEADER]
    events += [_chat_turn(i, calls) for i, calls in enumerate(turns)]
    events.append(_chat_turn(len(turns), ()))
    events += extra
    events.append(SessionEnded(at=len(turns) + 1.0, status=Status.COMPLETED))
    return fold(events)


def _reason(score: Score) -> str:
    assert not score.passed
    return score.reason


GREP = ("grep", '{"pattern": "HANG_LIMIT", "path": "src"}')
READ = ("read", '{"path": "src/limits.py"}')
WRITE = ("write", '{"path": "x", "content": ""}')

RULES = [
    pytest.param(
        {"forbidTools": ["write"]},
        _session([GREP], [WRITE]),
        "forbidTools",
        "forbidden tool write fired (turn 2)",
        id="forbidden-tool",
    ),
    pytest.param(
        {"expectMaxTurns": 2},
        _session([GREP], [READ]),
        "expectMaxTurns",
        "3 turns > max 2",
        id="max-turns",
    ),
    pytest.param(
        {"expectTool": None},
        _session([GREP], [READ, GREP]),
        "expectTool",
        "expected no tool, called grep, read",
        id="no-tool",
    ),
    pytest.param(
        {"expectFirstToolIn": ["grep"]},
        _session([READ], [GREP]),
        "expectFirstToolIn",
        "expected first tool in [grep], called read",
        id="first-tool",
    ),
    pytest.param(
        {"expectFirstToolIn": ["grep", "glob"]},
        _session(),
        "expectFirstToolIn",
        "expected first tool in [grep, glob], no tool fired",
        id="first-tool-none",
    ),
    pytest.param(
        {"expectTool": "grep"},
        _session([READ], [READ]),
        "expectTool",
        "expected grep to fire, called read",
        id="expect-tool",
    ),
    pytest.param(
        {"expectTool": "grep", "expectInArgs": {"pattern": "HANG_LIMIT_SECONDS"}},
        _session([GREP]),
        "expectInArgs",
        'no grep call has arguments matching {"pattern": "HANG_LIMIT_SECONDS"} (1 call; last'
        ' turn 1: pattern: "HANG_LIMIT" does not contain "HANG_LIMIT_SECONDS")',
        id="in-args",
    ),
    pytest.param(
        {"expectTool": "grep", "expectInArgs": {"pattern": "HANG"}},
        _session([("grep", '{"pattern": "HANG')]),
        "expectInArgs",
        'no grep call has arguments matching {"pattern": "HANG"} (1 call; last'
        " turn 1: arguments are not valid JSON)",
        id="in-args-invalid-json",
    ),
    pytest.param(
        {"expectBashMatches": ["^pytest\\b", "-q"]},
        _session([("bash", '{"command": "pytest tests"}')], [("bash", '{"command": "ls"}')]),
        "expectBashMatches",
        'no bash command matches "-q" (ran: pytest tests; ls)',
        id="bash-matches",
    ),
    pytest.param(
        {"expectBashMatches": "^pytest"},
        _session([GREP]),
        "expectBashMatches",
        'no bash command matches "^pytest" (no bash command ran)',
        id="bash-none",
    ),
]


@pytest.mark.parametrize(("fields", "session", "name", "reason"), RULES)
def test_each_rule_fails_with_its_one_line_reason(
    tmp_path: Path, fields: dict[str, Any], session: Session, name: str, reason: str
) -> None:
    score = score_session(_case(tmp_path, **fields), session)
    assert _reason(score) == reason
    assert score.checks[-1] == Check(name=name, passed=False, detail=reason)
    assert all(check.passed for check in score.checks[:-1])


PASSING = [
    pytest.param({"forbidTools": ["write", "edit"]}, _session([GREP], [READ]), id="forbid"),
    pytest.param({"expectMaxTurns": 3}, _session([GREP], [READ]), id="max-turns-equal"),
    pytest.param({"expectTool": None}, _session(), id="no-tool"),
    pytest.param({"expectFirstToolIn": ["glob", "grep"]}, _session([GREP, READ]), id="first"),
    pytest.param({"expectTool": "read"}, _session([GREP], [GREP, READ]), id="anywhere"),
    pytest.param(
        {"expectTool": "grep", "expectInArgs": {"pattern": "HANG_LIMIT"}},
        _session([("grep", '{"pattern": "hang"}')], [GREP]),
        id="in-args-any-call",
    ),
    pytest.param(
        {"expectBashMatches": ["^pytest\\b", "-q$"]},
        _session([("bash", '{"command": "ls"}')], [("bash", '{"command": ["pytest", "-q"]}')]),
        id="bash-argv",
    ),
]


@pytest.mark.parametrize(("fields", "session"), PASSING)
def test_each_rule_passes_when_satisfied(
    tmp_path: Path, fields: dict[str, Any], session: Session
) -> None:
    score = score_session(_case(tmp_path, **fields), session)
    assert score.passed, score.reason
    assert [c.name for c in score.checks][:2] == ["hang", "modelErrors"]
    assert score.reason == f"passed {len(score.checks)} checks"


def test_a_case_without_trajectory_expectations_passes_trajectory(tmp_path: Path) -> None:
    case = _case(tmp_path, files={"a.txt": "x"}, immutable=["a.txt"])
    checks = trajectory_checks(case, _session([WRITE], [("bash", "{}")]))
    assert [(c.name, c.passed) for c in checks] == [("hang", True), ("modelErrors", True)]


def _hung() -> Session:
    return fold(
        [
            HEADER,
            _chat_turn(0, [WRITE], duration=0.5),
            _chat_turn(1, [WRITE], duration=301.0),
            _chat_turn(2, (), status=500),
            SessionEnded(at=400.0, status=Status.COMPLETED),
        ]
    )


def test_a_model_call_open_past_the_hang_limit_is_a_hang(tmp_path: Path) -> None:
    case = _case(tmp_path, forbidTools=["write"], expectMaxTurns=1)
    assert _reason(score_session(case, _hung())) == (
        "model call of turn 2 was open 301.0s (hang limit 300s)"
    )
    relaxed = score_session(case, _hung(), hang_limit=400.0)
    assert _reason(relaxed) == "turn 3: model call failed: HTTP 500: server_error: overloaded"
    assert make_scorer(hang_limit=1.0)(case, _hung()).reason == (
        "model call of turn 2 was open 301.0s (hang limit 1s)"
    )


def test_a_runner_timeout_is_a_hang_and_an_infra_error_is_not(tmp_path: Path) -> None:
    case = _case(tmp_path, forbidTools=["write"])
    timeout = RunnerFact(at=5.0, fact=FactKind.TIMEOUT, message="attempt passed 5s")
    infra = RunnerFact(at=5.0, fact=FactKind.INFRA_ERROR, message="sandbox died")
    assert _reason(score_session(case, _session([WRITE], extra=[timeout]))) == (
        "runner timeout: attempt passed 5s"
    )
    assert _reason(score_session(case, _session([WRITE], extra=[infra]))) == (
        "forbidden tool write fired (turn 1)"
    )


def test_transport_failures_fail_as_model_errors(tmp_path: Path) -> None:
    broken = Exchange(
        at=1.0,
        duration=2.0,
        request=Request(method="POST", url=CHAT, body=b'{"model": "m", "messages": []}'),
        error=TransportError(type="ReadError", message="connection reset"),
    )
    elsewhere = Exchange(
        at=1.0,
        duration=0.1,
        request=Request(method="GET", url="https://example.org/x"),
        error=TransportError(type="ConnectError", message="refused"),
    )
    case = _case(tmp_path, expectTool="grep")
    events: list[Event] = [HEADER, _chat_turn(0, [GREP]), broken]
    assert _reason(score_session(case, fold(events))) == (
        "turn 2: model call failed: ReadError: connection reset"
    )
    events = [HEADER, _chat_turn(0, [GREP]), elsewhere]
    assert _reason(score_session(case, fold(events))) == (
        "HTTP exchange failed: ConnectError: refused"
    )


ORDER = [
    pytest.param(
        {"forbidTools": ["write"], "expectMaxTurns": 1},
        _hung(),
        "hang",
        id="hang-before-error-forbidden-and-turns",
    ),
    pytest.param(
        {"forbidTools": ["write"]},
        fold([HEADER, _chat_turn(0, [WRITE]), _chat_turn(1, (), status=500)]),
        "modelErrors",
        id="error-before-forbidden",
    ),
    pytest.param(
        {"forbidTools": ["write"], "expectMaxTurns": 1, "expectTool": "grep"},
        _session([READ], [WRITE], [READ]),
        "forbidTools",
        id="forbidden-before-turns",
    ),
    pytest.param(
        {"expectTool": None, "expectMaxTurns": 1},
        _session([READ]),
        "expectMaxTurns",
        id="turns-before-no-tool",
    ),
    pytest.param(
        {"expectFirstToolIn": ["grep"], "expectTool": "grep"},
        _session([READ]),
        "expectFirstToolIn",
        id="first-before-anywhere",
    ),
    pytest.param(
        {"expectTool": "grep", "expectInArgs": {"pattern": "x"}, "expectBashMatches": "y"},
        _session([READ]),
        "expectTool",
        id="anywhere-before-args",
    ),
    pytest.param(
        {"expectTool": "grep", "expectInArgs": {"pattern": "x"}, "expectBashMatches": "y"},
        _session([GREP]),
        "expectInArgs",
        id="args-before-bash",
    ),
]


@pytest.mark.parametrize(("fields", "session", "first"), ORDER)
def test_the_first_failing_rule_in_order_is_the_reason(
    tmp_path: Path, fields: dict[str, Any], session: Session, first: str
) -> None:
    score = score_session(_case(tmp_path, **fields), session)
    assert not score.passed
    assert score.checks[-1].name == first
    assert score.reason == score.checks[-1].detail


def test_a_forbidden_tool_is_reported_before_too_many_turns(tmp_path: Path) -> None:
    case = _case(tmp_path, forbidTools=["edit"], expectMaxTurns=2)
    session = _session([READ], [("edit", "{}")], [READ], [READ])
    score = score_session(case, session)
    assert score.reason == "forbidden tool edit fired (turn 2)"
    assert [c.name for c in score.checks] == ["hang", "modelErrors", "forbidTools"]


def _fm(**items: Any) -> FrozenMap[Any]:
    return FrozenMap.of(items)


COMPARISONS = [
    # strings: the expectation is contained in what was sent
    pytest.param("HANG", "HANG_LIMIT|hang", True, id="substring"),
    pytest.param("HANG_LIMIT_SECONDS", "HANG_LIMIT", False, id="substring-direction"),
    pytest.param("", "anything", True, id="empty-string"),
    pytest.param("4", 4, False, id="string-vs-number"),
    # numbers: equality, ints and floats alike, booleans are not numbers
    pytest.param(1, 1.0, True, id="int-float"),
    pytest.param(2.5, 2.5, True, id="float"),
    pytest.param(1, 2, False, id="number-differs"),
    pytest.param(1, True, False, id="number-vs-true"),
    pytest.param(0, False, False, id="zero-vs-false"),
    pytest.param(1, "1", False, id="number-vs-string"),
    # booleans: equality with booleans only
    pytest.param(True, True, True, id="true"),
    pytest.param(True, 1, False, id="true-vs-1"),
    pytest.param(False, 0, False, id="false-vs-0"),
    pytest.param(False, True, False, id="false-vs-true"),
    # arrays: every expected element matched by some sent element
    pytest.param(("b", 1), ["a", 1.0, "abc"], True, id="array-subset-any-order"),
    pytest.param(("b", "b"), ["abc"], True, id="array-repeats"),
    pytest.param(("z",), ["a", "b"], False, id="array-missing"),
    pytest.param((1,), [True], False, id="array-true-is-not-1"),
    pytest.param((), [], True, id="empty-array"),
    pytest.param(("a",), "a", False, id="array-vs-string"),
    pytest.param((_fm(k="v"),), [{"k": "vvv", "x": 1}], True, id="array-of-objects"),
    # objects: recursive subset
    pytest.param(_fm(a=_fm(b=True)), {"a": {"b": True, "c": 2}, "d": 1}, True, id="nested"),
    pytest.param(_fm(a=_fm(b=True)), {"a": {"c": True}}, False, id="nested-missing"),
    pytest.param(_fm(a=1), {"b": 1}, False, id="missing-key"),
    pytest.param(_fm(a=1), [1], False, id="object-vs-array"),
    pytest.param(_fm(), {"x": 1}, True, id="empty-object"),
]


@pytest.mark.parametrize(("expected", "sent", "matches"), COMPARISONS)
def test_expect_in_args_comparison(expected: Any, sent: object, matches: bool) -> None:
    assert (args_mismatch(_fm(v=expected), {"v": sent}) is None) is matches


@pytest.mark.parametrize(("expected", "sent", "matches"), COMPARISONS)
def test_expect_in_args_comparison_through_a_scored_session(
    tmp_path: Path, expected: Any, sent: object, matches: bool
) -> None:
    case = _case(tmp_path, expectTool="grep", expectInArgs={"v": _plain(expected)})
    score = score_session(case, _session([("grep", json.dumps({"v": sent}))]))
    assert score.passed is matches, score.reason


def _plain(value: Any) -> Any:
    if isinstance(value, FrozenMap):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def test_mismatches_name_the_json_path() -> None:
    expected = _fm(opts=_fm(flags=("-i",), depth=2))
    assert args_mismatch(expected, {"opts": {"flags": ["-n"], "depth": 2}}) == (
        'opts.flags: no element matches "-i"'
    )
    assert args_mismatch(expected, {"opts": {"flags": ["-i"], "depth": True}}) == (
        "opts.depth: expected 2, got true"
    )
    assert args_mismatch(expected, {"opts": []}) == "opts: expected an object, got an array"
    assert args_mismatch(expected, "x") == "arguments: expected an object, got a string"


def test_arguments_that_are_not_a_json_object_never_satisfy(tmp_path: Path) -> None:
    case = _case(tmp_path, expectTool="grep", expectInArgs={"pattern": "a"})
    for sent in ('["pattern", "a"]', '"pattern a"', "pattern=a", ""):
        score = score_session(case, _session([("grep", sent)]))
        assert score.checks[-1].name == "expectInArgs" and not score.passed


def test_judged_cases_get_a_judge_check_that_is_not_run(tmp_path: Path) -> None:
    case = _case(tmp_path, rubric="quality", forbidTools=["write"])
    score = score_session(case, _session([READ]))
    assert score.passed
    assert score.checks[-1] == Check(
        name="judge", passed=True, detail="not run: judge not configured"
    )
    assert score.reason == "passed 3 checks; judge not configured"
    failed = score_session(case, _session([WRITE]))
    assert not failed.passed and "judge" not in [c.name for c in failed.checks]


def test_make_scorer_is_a_scorer_and_refuses_bad_limits(tmp_path: Path) -> None:
    scorer: Scorer = make_scorer(hang_limit=10.0, verify_timeout=5.0)
    case = _case(tmp_path, expectTool="grep")
    assert scorer(case, _session([GREP])) == score_session(
        case, _session([GREP]), hang_limit=10.0, verify_timeout=5.0
    )
    default: Scorer = score_session
    assert default(case, _session([READ])).reason == "expected grep to fire, called read"
    with pytest.raises(ValueError, match="hang_limit must be positive"):
        make_scorer(hang_limit=0)
    with pytest.raises(ValueError, match="verify_timeout must be positive"):
        make_scorer(verify_timeout=-1.0)


# -- control tools -----------------------------------------------------------------

NEXT = ("next_action", '{"action": "read"}')
DECLARED = (HarnessEvent(at=0.0, name="agent", fields=(("control_tool", "next_action"),)),)


def test_a_declared_control_tool_is_not_tool_use(tmp_path: Path) -> None:
    first = _case(tmp_path, expectFirstToolIn=["read"])
    assert score_session(first, _session([NEXT], [READ], extra=DECLARED)).passed
    none = _case(tmp_path, expectTool=None)
    assert score_session(none, _session([NEXT], extra=DECLARED)).passed


def test_an_undeclared_routing_tool_still_counts(tmp_path: Path) -> None:
    case = _case(tmp_path, expectFirstToolIn=["read"])
    score = score_session(case, _session([NEXT], [READ]))
    assert _reason(score) == "expected first tool in [read], called next_action"
