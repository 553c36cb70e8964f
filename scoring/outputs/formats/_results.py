"""The one shape every machine-readable format is written from.

A live run, a replay, a rescore, a comparison and an A/B each become a
``RunResults``: one ``CaseResult`` per case and model, its attempts, and the
run's decision in words.  JUnit XML and the job summary are renderings of
this value, so the formats agree with each other and with the text report.
"""

from __future__ import annotations

import enum
from collections import Counter

import attrs


class Kind(enum.Enum):
    """What one attempt, or one case and model, amounts to in CI."""

    PASSED = "passed"
    """Passed (or, for a replay or comparison: nothing got worse)."""
    IMPROVEMENT = "improvement"
    """Failed before, passes now."""
    FAILED = "failed"
    """A check failed; the reason names the first one."""
    REGRESSION = "regression"
    """Passed before (as recorded, or in the baseline), fails now."""
    CHANGED = "changed"
    """Replay: the harness now does something else (a tool result or the conversation)."""
    STALE = "stale"
    """Replay: only harness text changed; the recording must be made live again."""
    UNTESTED = "untested"
    """Could not be tested (no session, an unreadable tape, no recording)."""
    ERROR = "error"
    """The attempt could not be judged (infrastructure failure, timeout, crash)."""
    EXCLUDED = "excluded"
    """Quarantined or a known gap: reported, kept out of every decision."""


SEVERITY: tuple[Kind, ...] = (
    Kind.CHANGED,
    Kind.REGRESSION,
    Kind.UNTESTED,
    Kind.ERROR,
    Kind.STALE,
    Kind.FAILED,
    Kind.EXCLUDED,
    Kind.IMPROVEMENT,
    Kind.PASSED,
)
"""Most severe first: a case and model takes the kind of its worst attempt."""

PROBLEMS = frozenset(SEVERITY[:6])
"""Kinds that a reader should look at (the first failing cases of a summary)."""


@attrs.frozen(kw_only=True)
class AttemptLine:
    """One attempt of a case and model."""

    attempt: int
    """0-based attempt index."""
    kind: Kind
    """What it amounts to."""
    detail: str = ""
    """One line: the reason, the harness change, or the verdicts compared."""


@attrs.frozen(kw_only=True)
class CaseResult:
    """One case with one model: a JUnit testcase, a line of the summary."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model ("" when a comparison pairs two models)."""
    attempts: tuple[AttemptLine, ...]
    """Its attempts, in order."""
    seconds: float = 0.0
    """Time its attempts took together."""
    excluded: str = ""
    """``quarantined`` or ``known gap`` when the case is kept out of decisions."""
    trace: str = ""
    """The command that shows its attempts turn by turn ("" when none applies)."""

    @property
    def kind(self) -> Kind:
        """The kind of its worst attempt (``EXCLUDED`` for a quarantined case)."""
        if self.excluded:
            return Kind.EXCLUDED
        kinds = {a.kind for a in self.attempts}
        return next((k for k in SEVERITY if k in kinds), Kind.PASSED)

    @property
    def reason(self) -> str:
        """The first worst attempt's detail, with how many attempts share the kind."""
        worst = [a for a in self.attempts if a.kind is self.kind]
        if not worst or self.kind is Kind.EXCLUDED:
            return self.excluded
        first = worst[0]
        share = (
            f" ({len(worst)} of {len(self.attempts)} attempts)" if len(self.attempts) > 1 else ""
        )
        return f"{first.detail}{share}" if first.detail else share.strip(" ()")


@attrs.frozen(kw_only=True)
class RunResults:
    """A run as CI sees it."""

    command: str
    """The command that produced it: ``live``, ``replay``, ``rescore``, ``compare``, ``ab``."""
    run_id: str
    """The run's id ("" for a comparison of two earlier runs)."""
    decision: str
    """The decision in words, as the text report's last line says it."""
    exit_code: int
    """The command's exit code."""
    cases: tuple[CaseResult, ...]
    """Every case and model, sorted by suite, case and model."""
    untested: tuple[str, ...] = ()
    """What could not be tested outside any case (unreadable tapes, unrecorded cases)."""

    @property
    def counts(self) -> dict[Kind, int]:
        """Cases and models per kind, every kind present (zero included)."""
        found = Counter(c.kind for c in self.cases)
        return {k: found.get(k, 0) for k in SEVERITY}

    @property
    def problems(self) -> tuple[CaseResult, ...]:
        """The cases a reader should look at, most severe first, then in case order."""
        rank = {k: i for i, k in enumerate(SEVERITY)}
        found = [c for c in self.cases if c.kind in PROBLEMS]
        return tuple(sorted(found, key=lambda c: rank[c.kind]))
