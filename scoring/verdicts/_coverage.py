"""What recorded attempts can catch, per tool and per case: a pure tally over sessions.

A replay serves the recorded model outputs, so a bug in a tool shows only
two ways: the tool's result changes (a later request carries other text: a
harness change), or its side effects change the end state an outcome check
reads (a passing attempt turns into a REGRESSION).  So, per suite and tool:

- attempts that **pass** a case with an outcome check (``verify``) and call
  the tool: a side-effect bug there can become a REGRESSION (``guarded``);
- attempts that call it but **only fail** (or pass a case that checks no
  outcome): a side-effect bug is invisible to replay (``failing only``,
  ``unchecked``);
- a tool offered but **never called**: nothing guards it;
- calls whose result **no later request carries**: a change in what the
  tool returns cannot be seen either.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable

import attrs

from evaltape.recorder import Session

from ..cases._cases import Case
from ..results._records import Verdict


class ToolState(enum.Enum):
    """What a side-effect bug in a tool would do to a replay of the recorded attempts."""

    GUARDED = "guarded"
    """A passing attempt of a case with an outcome check calls it: the bug can become a
    REGRESSION."""
    UNCHECKED = "unchecked"
    """Passing attempts call it, but their cases check no outcome: only a changed result
    can be seen."""
    FAILING_ONLY = "failing only"
    """Only failing attempts call it: a side-effect bug is invisible to replay."""
    NEVER_CALLED = "never called"
    """Offered to the model, never called: nothing guards it."""


@attrs.frozen(kw_only=True)
class Attempt:
    """One recorded attempt as coverage reads it."""

    case: Case
    """Today's definition of its case."""
    session: Session
    """The session (recorded, or replayed from the recording)."""
    verdict: Verdict
    """The recorded session's verdict under today's scorers."""


@attrs.frozen(kw_only=True)
class ToolCoverage:
    """One tool of one suite."""

    tool: str
    """The tool's name, as the model called it."""
    state: ToolState
    """What a side-effect bug in it would do."""
    calls: int
    """Calls of it, over every attempt."""
    passing: int
    """Passing attempts of cases with an outcome check that call it."""
    unchecked: int
    """Passing attempts of cases with no outcome check that call it."""
    failing: int
    """Attempts that call it and do not pass (failed or error)."""
    unseen: int
    """Calls whose result no later request carries."""
    cases: tuple[str, ...]
    """Ids of the cases whose attempts call it, sorted."""

    @property
    def results_unseen(self) -> bool:
        """True when it was called and no later request carries any of its results."""
        return self.calls > 0 and self.unseen == self.calls

    @property
    def line(self) -> str:
        """One sentence: what its recorded attempts can catch."""
        t = self.tool
        if self.state is ToolState.NEVER_CALLED:
            return f"{t}: never called — nothing guards it"
        if self.state is ToolState.GUARDED:
            said = (
                f"{t}: exercised by {self.passing} passing attempt(s) with an outcome check — "
                f"a side-effect bug in {t} can become a REGRESSION"
            )
        else:
            others = f"{self.failing} failing" + (
                f", {self.unchecked} passing with no outcome check" if self.unchecked else ""
            )
            said = (
                f"{t}: exercised by 0 passing attempts with an outcome check ({others}) — "
                f"a side-effect bug in {t} cannot be caught"
            )
        if self.results_unseen:
            return f"{said}; no later request carries its results, so a changed result is unseen"
        return said


@attrs.frozen(kw_only=True)
class CaseCoverage:
    """One case: its attempts and the tools they call."""

    case_id: str
    """The case."""
    attempts: int
    """Recorded attempts."""
    passing: int
    """Of them, passing under today's scorers."""
    outcome_checked: bool
    """The case has an outcome check (``verify``)."""
    tools: tuple[tuple[str, int], ...]
    """Per tool called, how many of the attempts call it; by name."""


@attrs.frozen(kw_only=True)
class SuiteCoverage:
    """One suite: a row per tool, a row per case, and the verdict."""

    suite: str
    """The suite's name."""
    attempts: int
    """Recorded attempts."""
    passing: int
    """Of them, passing under today's scorers."""
    tools: tuple[ToolCoverage, ...]
    """Every tool offered or called, guarded ones first, then by name."""
    cases: tuple[CaseCoverage, ...]
    """Every case with a recorded attempt, by id."""

    def named(self, state: ToolState) -> tuple[str, ...]:
        """The tools in ``state``."""
        return tuple(t.tool for t in self.tools if t.state is state)

    @property
    def verdict(self) -> str:
        """One line: how many tools a side-effect bug could be caught in, and which not."""
        guarded = self.named(ToolState.GUARDED)
        parts = [
            f"{self.suite}: {len(guarded)} of {len(self.tools)} tool(s) guarded by passing "
            f"attempts ({', '.join(guarded) or 'none'})"
        ]
        for state in (ToolState.FAILING_ONLY, ToolState.UNCHECKED, ToolState.NEVER_CALLED):
            if names := self.named(state):
                parts.append(f"{state.value}: {', '.join(names)}")
        if unseen := [t.tool for t in self.tools if t.results_unseen]:
            parts.append(f"results unseen: {', '.join(unseen)}")
        return "; ".join(parts)


@attrs.frozen(kw_only=True)
class Coverage:
    """What the recorded attempts can catch, suite by suite."""

    suites: tuple[SuiteCoverage, ...]
    """By suite name."""

    @property
    def attempts(self) -> int:
        """Recorded attempts read."""
        return sum(s.attempts for s in self.suites)


_ORDER = {s: i for i, s in enumerate(ToolState)}


def _state(passing: int, unchecked: int, calls: int) -> ToolState:
    if passing:
        return ToolState.GUARDED
    if unchecked:
        return ToolState.UNCHECKED
    return ToolState.FAILING_ONLY if calls else ToolState.NEVER_CALLED


def _suite(suite: str, attempts: list[Attempt]) -> SuiteCoverage:
    offered: set[str] = set()
    calls: dict[str, int] = defaultdict(int)
    unseen: dict[str, int] = defaultdict(int)
    by_state: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    cases: dict[str, set[str]] = defaultdict(set)
    per_case: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        per_case[a.case.id].append(a)
        for turn in a.session.turns:
            offered.update(turn.call.tools_offered)
        called = set()
        for record in a.session.tool_calls:
            name = record.call.name
            called.add(name)
            calls[name] += 1
            unseen[name] += record.result is None
        passed = a.verdict is Verdict.PASSED
        kind = ("passing" if a.case.verify else "unchecked") if passed else "failing"
        for name in called:
            by_state[name][kind] += 1
            cases[name].add(a.case.id)
    tools = []
    for name in sorted(offered | set(calls)):
        n = by_state[name]
        tools.append(
            ToolCoverage(
                tool=name,
                state=_state(n["passing"], n["unchecked"], calls[name]),
                calls=calls[name],
                passing=n["passing"],
                unchecked=n["unchecked"],
                failing=n["failing"],
                unseen=unseen[name],
                cases=tuple(sorted(cases[name])),
            )
        )
    tools.sort(key=lambda t: (_ORDER[t.state], t.tool))
    rows = []
    for case_id in sorted(per_case):
        group = per_case[case_id]
        counted: dict[str, int] = defaultdict(int)
        for a in group:
            for name in {r.call.name for r in a.session.tool_calls}:
                counted[name] += 1
        rows.append(
            CaseCoverage(
                case_id=case_id,
                attempts=len(group),
                passing=sum(a.verdict is Verdict.PASSED for a in group),
                outcome_checked=bool(group[0].case.verify),
                tools=tuple(sorted(counted.items())),
            )
        )
    return SuiteCoverage(
        suite=suite,
        attempts=len(attempts),
        passing=sum(a.verdict is Verdict.PASSED for a in attempts),
        tools=tuple(tools),
        cases=tuple(rows),
    )


def tally(attempts: Iterable[Attempt]) -> Coverage:
    """Coverage of ``attempts``, per suite (pure: no files, no clock)."""
    suites: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        suites[a.case.suite].append(a)
    return Coverage(suites=tuple(_suite(name, suites[name]) for name in sorted(suites)))
