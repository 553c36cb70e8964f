"""The scoring step of an attempt: deterministic checks first, then (judged cases) the judge."""

from __future__ import annotations

from evaltape.recorder import Session, Status

from ...cases._cases import Case
from ...checks._score import Check, Score, Scorer
from ...checks._scorers import DeterministicScorer
from ...judge._floors import with_judgement
from ...judge._judge import judge_request, read_rubric, reused_event
from ...judge._judgement import JudgeError, Judgement, JudgeState
from ...judge._reuse import reuse_judgement
from ...sandbox import Sandbox
from .._jobs import Job, JobEnv
from ._tee import Tee


def score_attempt(scorer: Scorer, case: Case, session: Session) -> Score:
    """An attempt passes only if its session completed and ``scorer`` passes it.

    A session that ended failed (the agent raised or exited non-zero), timed
    out, was cancelled or has no end fails with that as its reason, whatever
    the scorer would say about the part that was recorded.
    """
    end = session.end
    if end is None or end.status is not Status.COMPLETED:
        detail = "the session has no end" if end is None else f"session {end.status.value}"
        if end is not None and end.reason:
            detail += f": {end.reason}"
        check = Check(name="completed", passed=False, detail=detail)
        return Score(passed=False, reason=detail, checks=(check,))
    return scorer(case, session)


def default_scorer(sandbox: Sandbox | None = None) -> Scorer:
    """The scorer live and replay use unless told otherwise: ``score_session``, its
    ``verify`` run in ``sandbox`` (None: ``Sandbox.find()``)."""
    return DeterministicScorer(sandbox=sandbox)


def judge_step(
    job: Job, env: JobEnv, tee: Tee, score: Score, session: Session, tape: Session | None
) -> tuple[Score, Judgement | None]:
    """The judge step of a judged attempt that passed every deterministic check.

    Live: ask ``env.judge`` (recorded on this attempt's tape), or keep the
    "not configured" check.  Replay (``tape`` is the recorded session): reuse
    the verdict recorded for the same rubric and transcript; only with
    ``env.replay.allow_live_judge`` is a judge asked when there is none.
    """
    if job.case.rubric is None or not score.passed:
        return score, None
    try:
        request = judge_request(job.case, session, read_rubric(job.case))
    except JudgeError as exc:
        check = Check(name="judge", passed=False, detail=str(exc))
        checks = (*(c for c in score.checks if c.name != "judge"), check)
        return Score(passed=False, reason=check.detail, checks=checks), None
    if tape is not None:
        judgement = reuse_judgement(request, tape)
        if judgement.state is not JudgeState.NOT_REJUDGED:
            tee.append(reused_event(judgement, tee.now()))
        elif env.judge is not None and env.replay.allow_live_judge:
            judgement = env.judge.grade(request, tee, stop=env.stop.event)
    elif env.judge is not None:
        judgement = env.judge.grade(request, tee, stop=env.stop.event)
    else:
        judgement = Judgement(state=JudgeState.NOT_CONFIGURED, rubric=request.rubric)
    return with_judgement(score, judgement, env.floors), judgement
