"""``Attempt``: one finished attempt, the one value every output of a run renders.

A run's attempts come back in its outcome's ``pool`` as ``Attempt`` values: the
case, the model and the attempt index; how the session ended; the verdict and why;
the score with every check, the judge's judgement and, in a replay, the decision;
the tokens and what they cost; and ``record``, the line the run record keeps.  The
session view is handed to the outputs made as an attempt finishes (export, cassette
updates) and is not kept, so a run of thousands of attempts holds no decoded
sessions.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evaltape.recorder import Status, Usage

from ..cases._cases import Case
from ..checks._score import Score
from ..cost._costs import CostBreakdown
from ..judge._judgement import Judgement
from ..results._records import AttemptResult, Verdict
from ..verdicts._replaycheck import ReplayDecision
from ._stop import StopKind


@attrs.frozen(kw_only=True)
class Attempt:
    """One finished attempt of a run."""

    case: Case
    """The case, as the run loaded it."""
    model: str
    """The model under test."""
    attempt: int
    """Zero-based attempt index (a confirmation re-run counts on after the planned ones)."""
    confirmation: bool
    """A re-run of a failing case the gate asked for, not one of the planned trials."""
    tape: Path
    """The tape its session was appended to."""
    session_id: str
    """Its session's id in ``tape``; "" when the attempt could not run at all."""
    status: Status
    """How its session ended."""
    verdict: Verdict
    """Passed, failed, or error (could not be judged)."""
    reason: str
    """Why it did not pass; "" when it passed."""
    tainted: bool
    """The evidence is unreliable (timeout, infrastructure failure, cancelled, stale)."""
    duration: float
    """Seconds the attempt took."""
    score: Score
    """The scorer's verdict with every check."""
    judgement: Judgement | None
    """A judged attempt that passed every other check: what the judge said (or why not)."""
    decision: ReplayDecision | None
    """A replay: the decision for the recorded attempt (its change and both verdicts)."""
    usage: Usage
    """Tokens of the agent's model calls."""
    judge_usage: Usage
    """Tokens the judge spent grading it; never part of ``usage``."""
    cost: CostBreakdown
    """The agent's model calls by token bucket, and their USD."""
    judge_cost: CostBreakdown
    """The judge's calls, priced apart; never part of ``cost``."""
    recorded_cost: CostBreakdown | None
    """A replay: the recorded session's calls priced with today's table; None live."""
    record: AttemptResult
    """The line the run record keeps of it."""


@attrs.frozen(kw_only=True)
class PoolOutcome:
    """What a run's pool of attempts did."""

    results: tuple[Attempt, ...]
    """Finished attempts, in the order they finished."""
    stopped: StopKind | None
    """Why the run stopped early, None if every attempt ran."""
    reason: str
    """The stop's one-line reason."""
    not_started: int = 0
    """Attempts never started because the budget was spent (the run is not stopped by it)."""
