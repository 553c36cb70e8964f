"""From judgements to checks: the judge check of one trial and the floors of a case."""

from __future__ import annotations

from collections.abc import Iterable

from ..checks._score import NOT_CONFIGURED, Check, Score
from ._judgement import (
    DEFAULT_FLOORS,
    NOT_REJUDGED,
    Floors,
    Judgement,
    JudgeState,
    JudgeStatus,
)

_RATIONALE_SHOWN = 160
"""Characters of the judge's rationale quoted in a check's detail."""


def judge_check(judgement: Judgement, floors: Floors = DEFAULT_FLOORS) -> Check:
    """The per-attempt ``judge`` check.

    A scored trial passes when its score reaches the trial floor; its detail
    is ``4/5 by MODEL: rationale``.  An unscored, not configured or not
    re-judged trial gets a check that did not run (``ran=False``, which
    does not fail the attempt and is not a pass): the runner reports a live
    unscored trial as an error, and ``judge_status`` tells a gate.
    """
    state = judgement.state
    if state is JudgeState.NOT_CONFIGURED:
        return Check(name="judge", passed=True, detail=NOT_CONFIGURED, ran=False)
    if state is JudgeState.NOT_REJUDGED:
        return Check(name="judge", passed=True, detail=judgement.problem or NOT_REJUDGED, ran=False)
    if state is JudgeState.UNSCORED or judgement.score is None:
        return Check(name="judge", passed=True, detail=f"unscored: {judgement.problem}", ran=False)
    shown = f"{judgement.score:g}/5"
    by = f" by {judgement.model}" if judgement.model else ""
    why = _cut(judgement.rationale) if judgement.rationale else "(no rationale)"
    if judgement.score < floors.trial:
        detail = f"judge scored {shown}{by}, below the trial floor {floors.trial:g}: {why}"
        return Check(name="judge", passed=False, detail=detail)
    return Check(name="judge", passed=True, detail=f"{shown}{by}: {why}")


def with_judgement(score: Score, judgement: Judgement, floors: Floors = DEFAULT_FLOORS) -> Score:
    """``score`` with its ``judge`` check replaced by the one ``judgement`` gives."""
    if not score.passed:
        return score
    checks = tuple(c for c in score.checks if c.name != "judge")
    check = judge_check(judgement, floors)
    if not check.passed:
        return Score(passed=False, reason=check.detail, checks=(*checks, check))
    if judgement.state is JudgeState.SCORED and judgement.score is not None:
        label = f"judge {judgement.score:g}/5"
    else:
        label = f"judge {judgement.state.value}"
    reason = f"passed {len(checks)} checks; {label}"
    return Score(passed=True, reason=reason, checks=(*checks, check))


def judge_floors(scores: Iterable[float | None], floors: Floors = DEFAULT_FLOORS) -> Check:
    """A judged case's verdict over its trials' judge scores (None = unscored).

    Unscored trials are left out of the mean, never counted as zero.  Fails
    when no trial was scored, when a trial is below ``floors.trial``, or when
    the mean is below ``floors.mean``.
    """
    given = list(scores)
    scored = [s for s in given if s is not None]
    unscored = len(given) - len(scored)
    left_out = f", {unscored} unscored left out" if unscored else ""
    if not scored:
        detail = f"no trial was scored ({unscored} unscored)"
        return Check(name="judgeFloors", passed=False, detail=detail)
    mean = sum(scored) / len(scored)
    lowest = min(scored)
    counted = f"{len(scored)} scored trial{'s' if len(scored) != 1 else ''}{left_out}"
    if lowest < floors.trial:
        detail = f"a trial scored {lowest:g} < trial floor {floors.trial:g} ({counted})"
        return Check(name="judgeFloors", passed=False, detail=detail)
    if mean < floors.mean:
        detail = f"mean {mean:.2f} < mean floor {floors.mean:g} ({counted})"
        return Check(name="judgeFloors", passed=False, detail=detail)
    detail = (
        f"mean {mean:.2f} >= {floors.mean:g}, lowest {lowest:g} >= {floors.trial:g} ({counted})"
    )
    return Check(name="judgeFloors", passed=True, detail=detail)


def case_floors(
    trials: Iterable[tuple[str, str, Judgement | None]], floors: Floors = DEFAULT_FLOORS
) -> tuple[tuple[str, str, Check], ...]:
    """Each judged case and model's ``judge_floors`` check, in first-seen order.

    ``trials`` are (case id, model, judgement) per attempt.  Only scored and
    unscored trials take part: one that was not judged, not configured or
    not re-judged decides nothing, and a case with no such trial is left out
    (``judge_status`` reports those).
    """
    groups: dict[tuple[str, str], list[float | None]] = {}
    for case_id, model, judgement in trials:
        if judgement is not None and judgement.state in (JudgeState.SCORED, JudgeState.UNSCORED):
            groups.setdefault((case_id, model), []).append(judgement.score)
    return tuple(
        (case_id, model, judge_floors(scores, floors))
        for (case_id, model), scores in groups.items()
    )


def judge_status(judgements: Iterable[Judgement | None]) -> JudgeStatus:
    """The run's judge status from every attempt's judgement (None = not judged)."""
    states = {j.state for j in judgements if j is not None}
    if not states:
        return JudgeStatus.NOT_NEEDED
    if JudgeState.NOT_CONFIGURED in states:
        return JudgeStatus.NOT_CONFIGURED
    if JudgeState.UNSCORED in states:
        return JudgeStatus.UNSCORED
    if JudgeState.NOT_REJUDGED in states:
        return JudgeStatus.NOT_REJUDGED
    return JudgeStatus.GRADED


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _RATIONALE_SHOWN else text[: _RATIONALE_SHOWN - 1] + "…"
