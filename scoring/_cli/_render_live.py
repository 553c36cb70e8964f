"""How ``evaltape live`` prints a ``LiveOutcome``: the per-model summary, costs and the judge."""

from __future__ import annotations

import click

from evaltape.recorder import Usage
from evaltape.scoring.cost._costs import CostRow, case_lines, compare_table, cost_line, usage_block
from evaltape.scoring.cost._costs import total as costs_total
from evaltape.scoring.cost._pricing import Prices, built_in_prices
from evaltape.scoring.judge._judge import (
    DEFAULT_FLOORS,
    Floors,
    Judge,
    JudgeState,
    JudgeStatus,
    case_floors,
    judge_status,
)
from evaltape.scoring.results._records import Verdict, tally
from evaltape.scoring.run._jobs import JobResult
from evaltape.scoring.run._pool import PoolOutcome


def tokens(usage: Usage) -> str:
    """``N tokens (I in, O out)``."""
    return f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in, {usage.output_tokens:,} out)"


def print_summary(
    outcome: PoolOutcome,
    models: tuple[str, ...],
    judge: Judge | None = None,
    floors: Floors = DEFAULT_FLOORS,
    *,
    prices: Prices | None = None,
) -> JudgeStatus:
    """Per model ``model: passed/total`` with tokens and cost, then the run's, then the judge.

    Every cost carries the price table's vintage; a model with no price shows
    ``n/a``, never $0.00.  A single-model run lists each case (tokens, cost)
    and a ``Usage:`` block of token buckets; ``--compare`` gets one table row
    per model (passed/total, duration, tokens, cost).  Judged cases get one
    line each with their floor decision; grading tokens and cost get lines of
    their own (never added to the agent's); the summary ends with
    ``judge_status: ...`` (only the scoreboard and the gate report follow it).
    Returns that status.
    """
    prices = prices if prices is not None else built_in_prices()
    attempts = [r.attempt_result() for r in outcome.results]
    total = Usage()
    rows: list[CostRow] = []
    for tally_row in tally(attempts, models):
        mine = [r for r in outcome.results if r.job.model == tally_row.model]
        usage = Usage()
        for r in mine:
            usage += r.usage
        total += usage
        errors = sum(1 for r in mine if r.tainted)
        extra = f", {errors} could not be judged" if errors else ""
        click.echo(
            f"{tally_row.model}: {tally_row.passed}/{tally_row.total} passed{extra} · "
            f"{tokens(usage)}"
        )
        cost = costs_total(r.cost for r in mine)
        click.echo(f"  cost: {cost_line(cost, prices)}")
        rows.append(
            CostRow(
                label=tally_row.model,
                passed=tally_row.passed,
                total=tally_row.total,
                duration=sum(r.duration for r in mine),
                cost=cost,
            )
        )
    run_cost = costs_total(r.cost for r in outcome.results)
    if len(rows) > 1:
        click.echo("Compare:")
        for line in compare_table(rows, prices):
            click.echo(line)
    elif outcome.results:
        click.echo("Cases:")
        for line in case_lines(_case_rows(outcome)):
            click.echo(line)
        for line in usage_block(run_cost, prices):
            click.echo(line)
    click.echo(f"{len(outcome.results)} attempts · {tokens(total)}")
    return _print_judge(outcome, judge, floors, prices)


def _case_rows(outcome: PoolOutcome) -> list[CostRow]:
    """One row per case: its attempts' verdicts, durations and costs summed."""
    by_case: dict[tuple[str, str], list[JobResult]] = {}
    for r in outcome.results:
        by_case.setdefault((r.job.case.suite, r.job.case.id), []).append(r)
    return [
        CostRow(
            label=case_id,
            passed=sum(1 for r in results if r.verdict is Verdict.PASSED),
            total=sum(1 for r in results if r.verdict is not Verdict.SKIPPED),
            duration=sum(r.duration for r in results),
            cost=costs_total(r.cost for r in results),
        )
        for (_, case_id), results in sorted(by_case.items())
    ]


def _print_judge(
    outcome: PoolOutcome, judge: Judge | None, floors: Floors, prices: Prices | None = None
) -> JudgeStatus:
    judged = [r for r in outcome.results if r.judgement is not None]
    status = judge_status(r.judgement for r in outcome.results)
    trials = ((r.job.case.id, r.job.model, r.judgement) for r in outcome.results)
    for case_id, model, check in sorted(case_floors(trials, floors), key=lambda t: t[:2]):
        word = "PASS" if check.passed else "FAIL"
        click.echo(f"judged {case_id} [{model}]: {word} {check.detail}")
    if judge is not None:
        scored = sum(1 for r in judged if r.judgement and r.judgement.state is JudgeState.SCORED)
        grading = Usage()
        for r in outcome.results:
            grading += r.judge_usage
        click.echo(
            f"grading by {judge.who}: {scored} scored, {len(judged) - scored} unscored · "
            f"{tokens(grading)}, not counted above"
        )
        grading_cost = costs_total(r.judge_cost for r in outcome.results)
        table = prices if prices is not None else built_in_prices()
        click.echo(f"grading cost: {cost_line(grading_cost, table)}, not counted above")
    click.echo(f"judge_status: {status.value}")
    return status
