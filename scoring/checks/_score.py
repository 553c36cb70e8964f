"""What scoring one attempt yields, and the shape every scorer has.

A scorer is a pure function of a case and a folded session: it reads no
clock, opens no socket and returns a ``Score``.  The first failed check is
the one-line reason.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from evaltape.recorder import Session, Status

from ..cases._cases import Case

NOT_CONFIGURED = "not run: judge not configured"
"""Detail of the judge check when no judge is configured (the judge is told apart
by this text in every output, so it is defined where checks are)."""


@attrs.frozen(kw_only=True)
class Check:
    """One rule applied to an attempt."""

    name: str
    """Short rule name, e.g. "forbidTools" or "verify"."""
    passed: bool
    """Whether the attempt satisfied it."""
    detail: str = ""
    """One line: why it failed, or what was seen."""
    ran: bool = True
    """False when the rule could not be applied (no judge configured, no recorded verdict,
    no valid score).  Such a check has ``passed=True`` so it does not fail the attempt on its
    own, but it is no evidence of passing: reports say "not run" and exports leave it out."""


@attrs.frozen(kw_only=True)
class Score:
    """The verdict on one attempt."""

    passed: bool
    """True if every check passed."""
    reason: str
    """The first failed check's detail, or a one-line summary of a pass."""
    checks: tuple[Check, ...] = ()
    """The checks run, in order (scoring stops at the first failure)."""


class Scorer(Protocol):
    """Turns a case and a recorded or replayed session into a Score."""

    def __call__(self, case: Case, session: Session, /) -> Score: ...


def completed_without_error(case: Case, session: Session, /) -> Score:
    """The weakest verdict: the session ended on its own and no model call failed."""
    del case
    if session.end is None:
        check = Check(name="completed", passed=False, detail="the session has no end")
    elif session.end.status is not Status.COMPLETED:
        detail = f"session {session.end.status.value}: {session.end.reason}".rstrip(": ")
        check = Check(name="completed", passed=False, detail=detail)
    elif session.errors:
        check = Check(name="completed", passed=False, detail=session.errors[0].message)
    else:
        check = Check(name="completed", passed=True, detail="completed without error")
    return Score(passed=check.passed, reason=check.detail, checks=(check,))
