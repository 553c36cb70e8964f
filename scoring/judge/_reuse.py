"""Verdicts recorded on tapes: reusing them on replay and rescore, never calling a judge."""

from __future__ import annotations

import attrs

from evaltape.recorder import Session, Usage, decode_call

from ..cases._cases import Case
from ..checks._score import Score
from ._floors import with_judgement
from ._judge import judge_request, judgement_from_exchange, read_rubric
from ._judgement import (
    DEFAULT_FLOORS,
    DIGEST_HEADER,
    JUDGE_EVENT,
    NOT_RECORDED,
    NOT_REJUDGED,
    Floors,
    Judgement,
    JudgeRequest,
    JudgeState,
)
from ._prompt import judge_digest
from ._role import judge_exchanges


def recorded_judgement(session: Session, rubric_text: str, judge_input: str) -> Judgement | None:
    """A verdict recorded in ``session`` for exactly this rubric text and judge input.

    Looks at the session's judge exchanges (latest first) for one whose
    digest matches; None if there is none.  Opens no socket.
    """
    digest = judge_digest(rubric_text, judge_input)
    for exchange in reversed(judge_exchanges(session)):
        if any(k == DIGEST_HEADER and v == digest for k, v in exchange.request.headers):
            return judgement_from_exchange(exchange, _rubric_of(session, digest), recorded=True)
    return None


def _rubric_of(session: Session, digest: str) -> str:
    for event in session.harness:
        fields = dict(event.fields)
        if event.name == JUDGE_EVENT and fields.get("digest") == digest:
            rubric = fields.get("rubric")
            if isinstance(rubric, str):
                return rubric
    return ""


def reuse_judgement(request: JudgeRequest, tape: Session) -> Judgement:
    """The verdict recorded in ``tape`` for ``request``, or a NOT_REJUDGED judgement."""
    found = recorded_judgement(tape, request.rubric_text, request.judge_input)
    if found is not None:
        return attrs.evolve(found, rubric=request.rubric)
    asked = any(
        event.name == JUDGE_EVENT and dict(event.fields).get("rubric") == request.rubric
        for event in tape.harness
    )
    return Judgement(
        state=JudgeState.NOT_REJUDGED,
        rubric=request.rubric,
        problem=NOT_REJUDGED if asked else NOT_RECORDED,
        digest=request.digest,
    )


def rejudge_offline(
    score: Score,
    case: Case,
    session: Session,
    *,
    floors: Floors = DEFAULT_FLOORS,
    tape: Session | None = None,
) -> tuple[Score, Judgement | None]:
    """Rescore's judge step: reuse a recorded verdict, never call a judge.

    ``score`` is the deterministic score of ``session``; ``tape`` is the
    session holding the verdicts (default: ``session`` itself).  Returns the
    score with its judge check and the judgement (None when the case is not
    judged or the attempt already failed).  Raises ``JudgeError`` if the
    rubric cannot be read.
    """
    if case.rubric is None or not score.passed:
        return score, None
    request = judge_request(case, session, read_rubric(case))
    judgement = reuse_judgement(request, tape if tape is not None else session)
    return with_judgement(score, judgement, floors), judgement


def judge_usage(session: Session) -> Usage:
    """Tokens of the session's judge calls: grading cost, never the agent's."""
    total = Usage()
    for exchange in judge_exchanges(session):
        call = decode_call(exchange)
        total += call.usage if call is not None else Usage.unknown()
    return total
