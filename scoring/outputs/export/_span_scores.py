"""Scores of an attempt, as Langfuse score values and as the root span's evaluation events."""

from __future__ import annotations

from ...checks._score import Check, Score
from ...judge._judgement import Judgement
from ...results._records import AttemptResult, Verdict
from ._span_model import EVALUATION_EVENT, Attrs, ScoreValue, SpanEvent


def attempt_scores(
    attempt: AttemptResult, score: Score | None, judgement: Judgement | None, *, content: bool
) -> tuple[ScoreValue, ...]:
    """``passed`` (BOOLEAN), ``verdict`` (CATEGORICAL), ``replay.change`` (CATEGORICAL, replayed
    attempts), ``judge`` (NUMERIC 0-5) when scored, one BOOLEAN per check."""
    passed = attempt.verdict is Verdict.PASSED
    why = attempt.reason if content else ""
    out = [
        ScoreValue(name="passed", value=1.0 if passed else 0.0, data_type="BOOLEAN", comment=why),
        ScoreValue(name="verdict", value=attempt.verdict.value, data_type="CATEGORICAL"),
    ]
    if attempt.change:
        out.append(
            ScoreValue(
                name="replay.change",
                value=attempt.change,
                data_type="CATEGORICAL",
                comment=attempt.change_detail if content else "",
            )
        )
    judge_score = judgement.score if judgement is not None else attempt.judge_score
    if judge_score is not None:
        rationale = judgement.rationale if judgement is not None else ""
        out.append(
            ScoreValue(
                name="judge",
                value=float(judge_score),
                data_type="NUMERIC",
                comment=rationale if content else "",
            )
        )
    seen: dict[str, int] = {}
    for check in score.checks if score is not None else ():
        if check.ran:  # a check that did not run is no evidence either way: not a 0, not a 1
            out.append(_check_score(check, seen, content))
    return tuple(out)


def _check_score(check: Check, seen: dict[str, int], content: bool) -> ScoreValue:
    seen[check.name] = seen.get(check.name, 0) + 1
    suffix = f"#{seen[check.name]}" if seen[check.name] > 1 else ""
    return ScoreValue(
        name=f"check.{check.name}{suffix}",
        value=1.0 if check.passed else 0.0,
        data_type="BOOLEAN",
        comment=check.detail if content else "",
    )


def evaluation_event(score: ScoreValue, at: int, content: bool) -> SpanEvent:
    out: Attrs = (("gen_ai.evaluation.name", score.name),)
    if isinstance(score.value, str):  # CATEGORICAL: the category is the label
        out += (("gen_ai.evaluation.score.label", score.value),)
    else:
        out += (("gen_ai.evaluation.score.value", score.value),)
    if score.data_type == "BOOLEAN":
        out += (("gen_ai.evaluation.score.label", "pass" if score.value else "fail"),)
    if content and score.comment:
        out += (("gen_ai.evaluation.explanation", score.comment),)
    return SpanEvent(name=EVALUATION_EVENT, time_ns=at, attributes=out)
