"""The deterministic scorer: trajectory rules, then the outcome of the sandbox.

``score_session`` is what the runner calls for every attempt, live or
replayed, and what a rescore calls on old tapes: it needs nothing but the
case and the folded session.
"""

from __future__ import annotations

import attrs

from evaltape.recorder import Session

from ..cases._cases import Case
from ..sandbox import Sandbox
from ._answer import answer_checks
from ._custom_run import custom_checks
from ._outcome import outcome_checks
from ._score import NOT_CONFIGURED, Check, Score, Scorer
from ._trajectory import trajectory_checks

DEFAULT_HANG_LIMIT = 300.0
"""Seconds a model call may stay open before the attempt counts as hung."""
DEFAULT_VERIFY_TIMEOUT = 60.0
"""Seconds ``verify`` may run when the case gives no ``verifyTimeout``."""

JUDGE_NOT_RUN = NOT_CONFIGURED
"""Detail of the ``judge`` check of a judged case that no judge graded."""


def score_session(
    case: Case,
    session: Session,
    *,
    hang_limit: float = DEFAULT_HANG_LIMIT,
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT,
    sandbox: Sandbox | None = None,
) -> Score:
    """Score one attempt in a fixed order: trajectory rules, answer checks
    (``expectAnswer``), outcome checks, then the case's custom scorers, each
    stage only if everything before it passed.

    Stops at the first failed check, whose detail is the reason.  A judged
    case (one with a ``rubric``) that passed everything else gets a ``judge``
    check "not configured" that does not fail the attempt: this function is
    pure and calls no judge.  The runner replaces that check with the
    judge's verdict (``scoring._judge.with_judgement``), and a rescore with a
    verdict recorded on the tape (``rejudge_offline``).  ``verify`` runs in
    ``sandbox`` (default ``Sandbox.find()``, confined).
    """
    checks = list(trajectory_checks(case, session, hang_limit=hang_limit))
    if all(check.passed for check in checks):
        checks += answer_checks(case, session)
    if all(check.passed for check in checks):
        checks += outcome_checks(case, session, verify_timeout=verify_timeout, sandbox=sandbox)
    if all(check.passed for check in checks):
        checks += custom_checks(case, session)
    failed = next((check for check in checks if not check.passed), None)
    if failed is not None:
        return Score(passed=False, reason=failed.detail, checks=tuple(checks))
    summary = f"passed {len(checks)} checks"
    if case.rubric is not None:
        checks.append(Check(name="judge", passed=True, detail=JUDGE_NOT_RUN))
        summary += "; judge not configured"
    return Score(passed=True, reason=summary, checks=tuple(checks))


@attrs.frozen(kw_only=True)
class DeterministicScorer:
    """``score_session`` with fixed limits, as a ``Scorer``."""

    hang_limit: float = DEFAULT_HANG_LIMIT
    """Seconds a model call may stay open."""
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT
    """Seconds ``verify`` may run when the case gives no ``verifyTimeout``."""
    sandbox: Sandbox | None = None
    """Where ``verify`` runs; None: ``Sandbox.find()`` (confined)."""

    def __call__(self, case: Case, session: Session, /) -> Score:
        return score_session(
            case,
            session,
            hang_limit=self.hang_limit,
            verify_timeout=self.verify_timeout,
            sandbox=self.sandbox,
        )


def make_scorer(
    *,
    hang_limit: float = DEFAULT_HANG_LIMIT,
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT,
    sandbox: Sandbox | None = None,
) -> Scorer:
    """A ``Scorer`` that runs ``score_session`` with these limits, ``verify`` in ``sandbox``."""
    if not hang_limit > 0:
        raise ValueError(f"hang_limit must be positive, got {hang_limit!r}")
    if not verify_timeout > 0:
        raise ValueError(f"verify_timeout must be positive, got {verify_timeout!r}")
    return DeterministicScorer(
        hang_limit=hang_limit, verify_timeout=verify_timeout, sandbox=sandbox
    )
