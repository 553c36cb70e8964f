"""How ``evaltape replay`` prints a ``ReplayOutcome``: the summary, what changed, the
scoreboard, cost and the judge, and the decision in words last."""

from __future__ import annotations

import click

from evaltape.recorder import Usage

from ...cost._costs import cost_line
from ...cost._costs import total as costs_total
from ...cost._pricing import Prices, built_in_prices
from ...judge._floors import case_floors, judge_status
from ...judge._judge import Judge
from ...judge._judgement import DEFAULT_FLOORS, Floors, JudgeState, JudgeStatus
from ...run._finished import PoolOutcome
from ._replay_report import Row, decision_line, report


def rows_of(outcome: PoolOutcome) -> tuple[Row, ...]:
    """The report's rows: every replayed attempt with a decision, in a stable order (suite,
    case, model, attempt), so two replays of one tape print the same report."""
    rows = (
        Row(
            suite=r.case.suite,
            case_id=r.case.id,
            model=r.model,
            attempt=r.attempt,
            decision=r.decision,
        )
        for r in outcome.results
        if r.decision is not None
    )
    return tuple(sorted(rows, key=lambda r: (r.suite, r.case_id, r.model, r.attempt)))


def print_report(
    outcome: PoolOutcome,
    floors: Floors = DEFAULT_FLOORS,
    judge: Judge | None = None,
    *,
    prices: Prices | None = None,
    untested: tuple[str, ...] = (),
    verbose: bool = False,
    assumed: bool = False,
    errors: int = 0,
) -> JudgeStatus:
    """The summary, what changed, the scoreboard, cost and judge lines, then the decision.

    As in ``evaltape live``: each judged case and model gets its floor
    decision, a judge asked live (``--allow-live-judge``) gets a line with its
    tokens, then ``judge_status: ...``; the last line says the decision in
    words.  Returns the judge status.
    """
    rows = rows_of(outcome)
    for line in report(rows, verbose=verbose, assumed=assumed):
        click.echo(line)
    for line in untested:
        click.echo(f"UNTESTED {line}")
    tokens = sum(r.usage.total_tokens for r in outcome.results)
    asked = [
        r.judgement
        for r in outcome.results
        if r.judgement is not None
        and not r.judgement.recorded
        and r.judgement.state in (JudgeState.SCORED, JudgeState.UNSCORED)
    ]
    spent = "" if asked else "$0.00 spent; "
    click.echo(f"{spent}{tokens:,} tokens of recorded model calls replayed")
    recorded = costs_total(
        r.cost if r.recorded_cost is None else r.recorded_cost for r in outcome.results
    )
    vintage = prices if prices is not None else built_in_prices()
    click.echo(f"what they cost when recorded: {cost_line(recorded, vintage, 'recorded')}")
    trials = ((r.case.id, r.model, r.judgement) for r in outcome.results)
    for case_id, model, check in case_floors(trials, floors):
        word = "PASS" if check.passed else "FAIL"
        click.echo(f"judged {case_id} [{model}]: {word} {check.detail}")
    reused = sum(1 for r in outcome.results if r.judgement is not None and r.judgement.recorded)
    if judge is not None:
        grading = sum((r.judge_usage for r in outcome.results), Usage())
        click.echo(
            f"grading by {judge.who}: {len(asked)} asked live, {reused} recorded verdicts "
            f"reused · {grading.total_tokens:,} tokens ({grading.input_tokens:,} in, "
            f"{grading.output_tokens:,} out), not counted above"
        )
    status = judge_status(r.judgement for r in outcome.results)
    click.echo(f"judge_status: {status.value}")
    click.echo(decision_line(rows, untested=len(untested), errors=errors))
    return status
