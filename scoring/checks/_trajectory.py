"""Trajectory scoring: a pure fold over a session's trace, rules in a fixed order.

The rules run in the order below and stop at the first failure, whose detail
is the attempt's one-line reason.  They read the turns, the tool calls and
the recorded failures, never the reply text: an agent can write a perfect
final message while calling tools it was told not to.

1. ``hang``: no model call stayed open past the hang limit;
2. ``modelErrors``: no model call failed (HTTP error, broken stream, transport);
3. ``forbidTools``: no forbidden tool fired;
4. ``expectMaxTurns``: at most that many model turns;
5. ``expectTool`` (null): no tool fired at all;
6. ``expectFirstToolIn``: the first tool is one of these;
7. ``expectTool``: the tool fired at some point;
8. ``expectInArgs``: some call of ``expectTool`` carries these arguments;
9. ``expectBashMatches``: each pattern matches some bash command.

Calls to a tool the harness declares as its own control tool (a harness
event field ``control_tool``) are not tool use and are left out.  A text
(ReAct) agent, whose model names its actions in plain text, reports each
action it ran as a harness event ``tool_call`` (``TOOL_CALL_EVENT``): its
``tool`` field names the tool, its other fields but ``result`` are the
arguments (``task.log("tool_call", tool="bash", command="ls -la")``), and the
rules see it as a call of the turn before it.  Turns are counted from 1 in
messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence

from evaltape.recorder import Failure, Session, ToolCall, ToolCallRecord

from ..cases._cases import Case
from ..cases._frozen import FrozenMap, JsonValue, thaw
from ._score import Check

BASH_TOOL = "bash"
"""The tool whose ``command`` argument ``expectBashMatches`` reads."""

TOOL_CALL_EVENT = "tool_call"
"""Harness event name by which a text agent reports an action it ran (see module docs)."""

CONTROL_TOOL_FIELD = "control_tool"
"""Harness event field naming a tool the scorer ignores (see ``control_tools``)."""

_SHOWN = 80
"""Characters of a sent value quoted in a reason before it is cut."""


def trajectory_checks(
    case: Case, session: Session, *, hang_limit: float = 300.0
) -> tuple[Check, ...]:
    """Apply the trajectory rules in order; the last check is the first failure, if any.

    Rules without an expectation in ``case`` are left out, except the first
    two, which every attempt must pass.
    """
    checks: list[Check] = []
    for rule in _RULES:
        check = rule(case, session, hang_limit)
        if check is None:
            continue
        checks.append(check)
        if not check.passed:
            break
    return tuple(checks)


def args_mismatch(expected: JsonValue, sent: object, *, where: str = "") -> str | None:
    """Why ``sent`` (decoded JSON) does not satisfy ``expected``, or None if it does.

    Strings are contained in the sent string; numbers and booleans compare by
    equality (``1 == 1.0``, but ``true`` is not ``1``); every element of an
    expected array is matched by some element of the sent array; an expected
    object is a recursive subset of the sent object.
    """
    label = where or "arguments"
    if isinstance(expected, FrozenMap):
        if not isinstance(sent, dict):
            return f"{label}: expected an object, got {_kind(sent)}"
        for key, value in expected.pairs:
            path = f"{where}.{key}" if where else key
            if key not in sent:
                return f"{path}: missing"
            problem = args_mismatch(value, sent[key], where=path)
            if problem is not None:
                return problem
        return None
    if isinstance(expected, tuple):
        if not isinstance(sent, list):
            return f"{label}: expected an array, got {_kind(sent)}"
        for item in expected:
            if all(args_mismatch(item, element) is not None for element in sent):
                return f"{label}: no element matches {_show(thaw(item))}"
        return None
    if isinstance(expected, str):
        if not isinstance(sent, str):
            return f"{label}: expected a string containing {_show(expected)}, got {_kind(sent)}"
        if expected not in sent:
            return f"{label}: {_show(sent)} does not contain {_show(expected)}"
        return None
    if isinstance(expected, bool):
        if sent is not expected:
            return f"{label}: expected {_show(expected)}, got {_show(sent)}"
        return None
    if isinstance(sent, bool) or not isinstance(sent, int | float) or sent != expected:
        return f"{label}: expected {_show(expected)}, got {_show(sent)}"
    return None


Rule = Callable[[Case, Session, float], "Check | None"]


def _hang(case: Case, session: Session, hang_limit: float) -> Check:
    del case
    for turn in session.turns:
        if turn.exchange.duration > hang_limit:
            detail = (
                f"model call of turn {turn.index + 1} was open {turn.exchange.duration:.1f}s"
                f" (hang limit {_seconds(hang_limit)})"
            )
            return Check(name="hang", passed=False, detail=detail)
    for failure in session.errors:
        if _is_timeout(failure):
            return Check(name="hang", passed=False, detail=f"runner {failure.message}")
    longest = max((t.exchange.duration for t in session.turns), default=0.0)
    detail = f"longest model call {longest:.1f}s (hang limit {_seconds(hang_limit)})"
    return Check(name="hang", passed=True, detail=detail)


def _is_timeout(failure: Failure) -> bool:
    return failure.origin == "runner" and (
        failure.message == "timeout" or failure.message.startswith("timeout:")
    )


def _model_errors(case: Case, session: Session, hang_limit: float) -> Check:
    del case, hang_limit
    for failure in session.errors:
        if failure.origin in ("model", "transport"):
            if failure.turn is None:
                detail = f"HTTP exchange failed: {failure.message}"
            else:
                detail = f"turn {failure.turn + 1}: model call failed: {failure.message}"
            return Check(name="modelErrors", passed=False, detail=detail)
    return Check(name="modelErrors", passed=True, detail="no model call failed")


def _forbid_tools(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    if not case.forbid_tools:
        return None
    for record in _calls(session):
        if record.call.name in case.forbid_tools:
            detail = f"forbidden tool {record.call.name} fired (turn {record.turn + 1})"
            return Check(name="forbidTools", passed=False, detail=detail)
    detail = f"none of {_names(case.forbid_tools)} fired"
    return Check(name="forbidTools", passed=True, detail=detail)


def _max_turns(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    limit = case.expect_max_turns
    if limit is None:
        return None
    count = len(session.turns)
    if count > limit:
        return Check(name="expectMaxTurns", passed=False, detail=f"{count} turns > max {limit}")
    return Check(name="expectMaxTurns", passed=True, detail=f"{count} turns <= max {limit}")


def _no_tool(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    if not case.expect_no_tool:
        return None
    if _calls(session):
        detail = f"expected no tool, called {_names(_fired(_calls(session)))}"
        return Check(name="expectTool", passed=False, detail=detail)
    return Check(name="expectTool", passed=True, detail="no tool fired")


def _first_tool(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    allowed = case.expect_first_tool_in
    if allowed is None:
        return None
    first = _calls(session)[0].call.name if _calls(session) else None
    expected = f"[{', '.join(allowed)}]"
    if first is None:
        detail = f"expected first tool in {expected}, no tool fired"
        return Check(name="expectFirstToolIn", passed=False, detail=detail)
    if first not in allowed:
        detail = f"expected first tool in {expected}, called {first}"
        return Check(name="expectFirstToolIn", passed=False, detail=detail)
    return Check(name="expectFirstToolIn", passed=True, detail=f"first tool {first}")


def _tool(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    tool = case.expect_tool
    if tool is None:
        return None
    for record in _calls(session):
        if record.call.name == tool:
            detail = f"{tool} fired (turn {record.turn + 1})"
            return Check(name="expectTool", passed=True, detail=detail)
    fired = _fired(_calls(session))
    seen = f"called {_names(fired)}" if fired else "no tool fired"
    return Check(name="expectTool", passed=False, detail=f"expected {tool} to fire, {seen}")


def _in_args(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    expected, tool = case.expect_in_args, case.expect_tool
    if expected is None or tool is None:
        return None
    calls = [r for r in _calls(session) if r.call.name == tool]
    problem = ""
    for record in calls:
        sent = record.call.parsed_arguments()
        if sent is None:
            problem = f"turn {record.turn + 1}: arguments are not valid JSON"
            continue
        mismatch = args_mismatch(expected, sent)
        if mismatch is None:
            detail = f"{tool} call of turn {record.turn + 1} matches"
            return Check(name="expectInArgs", passed=True, detail=detail)
        problem = f"turn {record.turn + 1}: {mismatch}"
    if not calls:
        problem = f"{tool} never fired"
    wanted = json.dumps(thaw(expected), ensure_ascii=False, separators=(", ", ": "))
    count = f"{len(calls)} call{'s' if len(calls) != 1 else ''}; last " if calls else ""
    detail = f"no {tool} call has arguments matching {_cut(wanted)} ({count}{problem})"
    return Check(name="expectInArgs", passed=False, detail=detail)


def _bash_matches(case: Case, session: Session, hang_limit: float) -> Check | None:
    del hang_limit
    if not case.expect_bash_matches:
        return None
    commands = list(_bash_commands(_calls(session)))
    for pattern in case.expect_bash_matches:
        if not any(re.search(pattern, command) for command in commands):
            ran = "; ".join(commands)
            seen = f"ran: {_cut(ran)}" if commands else "no bash command ran"
            detail = f"no bash command matches {_show(pattern)} ({seen})"
            return Check(name="expectBashMatches", passed=False, detail=detail)
    count = len(case.expect_bash_matches)
    detail = f"{count} pattern{'s' if count != 1 else ''} matched"
    return Check(name="expectBashMatches", passed=True, detail=detail)


def _bash_commands(records: Sequence[ToolCallRecord]) -> Iterator[str]:
    """The ``command`` of every bash call: a string, or an argv list joined by spaces."""
    for record in records:
        if record.call.name != BASH_TOOL:
            continue
        sent = record.call.parsed_arguments()
        command = sent.get("command") if isinstance(sent, dict) else None
        if isinstance(command, str):
            yield command
        elif isinstance(command, list) and all(isinstance(part, str) for part in command):
            yield " ".join(command)


_RULES: tuple[Rule, ...] = (
    _hang,
    _model_errors,
    _forbid_tools,
    _max_turns,
    _no_tool,
    _first_tool,
    _tool,
    _in_args,
    _bash_matches,
)


def control_tools(session: Session) -> frozenset[str]:
    """Tools the harness declared as its own routing, not actions on the task.

    A harness declares one with a harness event field ``control_tool`` (e.g. a
    ``next_action`` function it forces to let a small model pick the next
    tool); calls to it are left out of every trajectory rule.
    """
    return frozenset(
        value
        for event in session.harness
        for key, value in event.fields
        if key == CONTROL_TOOL_FIELD and isinstance(value, str) and value
    )


def logged_calls(session: Session) -> tuple[ToolCallRecord, ...]:
    """The actions a text agent reported as ``tool_call`` harness events, as tool calls.

    Each is a call of the last turn that finished before it was logged; its
    arguments are the event's fields but ``tool`` and ``result``.
    """
    records: list[ToolCallRecord] = []
    for n, event in enumerate(session.harness):
        fields = dict(event.fields)
        tool = fields.pop("tool", None)
        if event.name != TOOL_CALL_EVENT or not isinstance(tool, str) or not tool:
            continue
        result = fields.pop("result", None)
        turn = sum(1 for t in session.turns if t.exchange.at + t.exchange.duration <= event.at)
        call = ToolCall(id=f"logged-{n}", name=tool, arguments=json.dumps(fields))
        records.append(
            ToolCallRecord(
                turn=max(0, turn - 1), call=call, result=result if isinstance(result, str) else None
            )
        )
    return tuple(records)


def _calls(session: Session) -> tuple[ToolCallRecord, ...]:
    logged = logged_calls(session) if session.harness else ()
    calls = session.tool_calls
    if logged:
        calls = tuple(sorted(calls + logged, key=lambda r: r.turn))
    hidden = control_tools(session)
    if not hidden:
        return calls
    return tuple(r for r in calls if r.call.name not in hidden)


def _fired(records: Sequence[ToolCallRecord]) -> tuple[str, ...]:
    """Names of the tools that fired, each once, in order of first call."""
    return tuple(dict.fromkeys(r.call.name for r in records))


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _show(value: object) -> str:
    """A value as JSON, cut to a readable length."""
    return _cut(json.dumps(value, ensure_ascii=False))


def _cut(text: str) -> str:
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _seconds(value: float) -> str:
    return f"{value:g}s"
