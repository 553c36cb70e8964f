"""How ``evaltape live`` prints a ``LiveOutcome``: the per-model summary, costs and the judge."""

from __future__ import annotations

import json
from collections.abc import Sequence

import click

from evaltape.recorder import Usage
from evaltape.replay._shared import ScrubProposal

from ..._config import display_path
from ...cost._costs import CostRow, case_lines, compare_table, cost_line, usage_block
from ...cost._costs import total as costs_total
from ...cost._pricing import Prices, built_in_prices
from ...judge._floors import case_floors, judge_status
from ...judge._judge import Judge
from ...judge._judgement import DEFAULT_FLOORS, Floors, JudgeState, JudgeStatus
from ...results._records import AttemptResult, Verdict, tally
from ...run._finished import Attempt, PoolOutcome
from ...run._gate_flow import GateOptions
from ...run._live import LiveOutcome
from ...run._stop import StopKind
from ...stats import suite_interval, suite_rate
from ...verdicts._entry_check import entry_exit_code, render_entry_results
from ...verdicts._flips import render_flips, summarize_flips
from ...verdicts._outcomes import case_outcomes
from . import _gate
from ._terminal import EXIT_INTERRUPTED, fail

EXIT_AUTH = 2
"""The provider refused the credentials (also: bad input)."""
EXIT_TIME_LIMIT = 124
"""The overall ``--time-limit`` passed; finished attempts are kept."""
EXIT_UNRECORDED = 4
"""``--update-cassettes`` (or ``rerecord``): some attempt's session was not as complete as
the recording (a provider error, a refused connection, a stream cut short, no answer) and
did not go into its cassette; the recorded session was kept."""
EXIT_NOT_RUN = 2
"""An attempt could not run at all (a lost worker, an agent a worker cannot import): the
run lacks evidence it was asked for."""


def _rate_line(attempts: Sequence[AttemptResult]) -> str:
    """``  pass rate: 83.3% per-case mean (95% CI 61.2-100.0%, clustered by case)``.

    Only with two or more cases and repeated trials: trials of one case are not
    independent, so the interval treats the case as the unit (never a pooled Wilson).
    """
    counts = [(o.passed, o.total) for o in case_outcomes(attempts).values() if o.total]
    if len(counts) < 2 or all(t == 1 for _, t in counts):
        return ""
    low, high = suite_interval(counts)
    return (
        f"  pass rate: {suite_rate(counts) * 100:.1f}% per-case mean "
        f"(95% CI {low * 100:.1f}-{high * 100:.1f}%, clustered by case)"
    )


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
    """Per model ``model: passed/total`` with tokens, the pass rate with its interval
    clustered by case, and cost; then the run's, then the judge.

    Every cost carries the price table's vintage; a model with no price shows
    ``n/a``, never $0.00.  A single-model run lists each case (tokens, cost)
    and, when calls used the prompt cache or reasoned, a ``Usage:`` block of
    token buckets; ``--compare`` gets one table row per model (passed/total,
    duration, tokens, cost).  Judged cases get one
    line each with their floor decision; grading tokens and cost get lines of
    their own (never added to the agent's); the summary ends with
    ``judge_status: ...`` (only the scoreboard and the gate report follow it).
    Returns that status.
    """
    prices = prices if prices is not None else built_in_prices()
    attempts = [r.record for r in outcome.results]
    # the tallies and rates are the gate's: planned trials only, confirmation re-runs apart
    planned = [a for a in attempts if not a.confirmation]
    total = Usage()
    rows: list[CostRow] = []
    for tally_row in tally(planned, models):
        mine = [r for r in outcome.results if r.model == tally_row.model]
        usage = Usage()
        for r in mine:
            usage += r.usage
        total += usage
        errors = sum(1 for r in mine if r.tainted and not r.confirmation)
        extra = f", {errors} could not be judged" if errors else ""
        click.echo(
            f"{tally_row.model}: {tally_row.passed}/{tally_row.total} passed"
            f"{extra} · {tokens(usage)}"
        )
        again = [a for a in attempts if a.model == tally_row.model and a.confirmation]
        if again:
            ok = sum(1 for a in again if a.verdict is Verdict.PASSED)
            click.echo(
                f"  confirmation re-runs: {ok}/{len(again)} passed (kept out of the tallies "
                "and rates, as the gate keeps them)"
            )
        rate = _rate_line([a for a in planned if a.model == tally_row.model])
        if rate:
            click.echo(rate)
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
        if beyond_in_and_out(run_cost.usage):
            for line in usage_block(run_cost, prices):
                click.echo(line)
    click.echo(f"{len(outcome.results)} attempts · {tokens(total)}")
    return _print_judge(outcome, judge, floors, prices)


def beyond_in_and_out(usage: Usage) -> bool:
    """Whether the ``Usage:`` block says more than the model's line (tokens in and out) and
    its cost line: cached or reasoning tokens, or calls that reported no usage."""
    extra = usage.cache_read_tokens + usage.cache_write_tokens + usage.reasoning_tokens
    return bool(extra) or not usage.reported


def _case_rows(outcome: PoolOutcome) -> list[CostRow]:
    """One row per case: its attempts' verdicts, durations and costs summed."""
    by_case: dict[tuple[str, str], list[Attempt]] = {}
    for r in outcome.results:
        by_case.setdefault((r.case.suite, r.case.id), []).append(r)
    return [
        CostRow(
            label=case_id + _reruns([r for r in results if r.confirmation]),
            passed=sum(1 for r in results if r.verdict is Verdict.PASSED and not r.confirmation),
            total=sum(1 for r in results if r.verdict.judged and not r.confirmation),
            duration=sum(r.duration for r in results),
            cost=costs_total(r.cost for r in results),
        )
        for (_, case_id), results in sorted(by_case.items())
    ]


def _reruns(again: Sequence[Attempt]) -> str:
    """`` + 3/12 confirmation re-runs`` after a case's label; "" without re-runs."""
    if not again:
        return ""
    ok = sum(1 for r in again if r.verdict is Verdict.PASSED)
    return f" + {ok}/{len(again)} confirmation re-runs"


def _print_judge(
    outcome: PoolOutcome, judge: Judge | None, floors: Floors, prices: Prices | None = None
) -> JudgeStatus:
    judged = [r for r in outcome.results if r.judgement is not None]
    status = judge_status(r.judgement for r in outcome.results)
    trials = ((r.case.id, r.model, r.judgement) for r in outcome.results)
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


def render_volatile(proposals: Sequence[ScrubProposal]) -> tuple[str, ...]:
    """The proposed scrub rules, as lines to read and a block to paste."""
    if not proposals:
        return ()
    lines = [
        f"volatile text: {len(proposals)} scrub rule(s) proposed. The first requests hold text "
        "that will differ on another run or day, so their replays would be STALE; add these "
        "lines to [tool.evaltape.scrub] in pyproject.toml (or [scrub] in evaltape.toml), "
        "which masks them on both sides of a replay, old recordings included:"
    ]
    for p in proposals:
        example = p.example if len(p.example) <= 40 else p.example[:39] + "…"
        lines.append(f"  {p.toml}  # {p.why}, e.g. {json.dumps(example, ensure_ascii=False)}")
    return tuple(lines)


def render_outcome(outcome: LiveOutcome, opts: GateOptions) -> int:
    """Print the outcome as ``evaltape live`` does; returns the exit code."""
    assert outcome.record is not None and outcome.record_path is not None
    pool = outcome.pool
    if outcome.trials > 1:  # before the summary, which ends with judge_status
        for line in render_flips(summarize_flips(outcome.record.attempts)):
            click.echo(line)
    entry_code = 0
    if outcome.entry is not None:
        for line in render_entry_results(outcome.entry):
            click.echo(line)
        entry_code = entry_exit_code(outcome.entry)
    print_summary(pool, outcome.models, outcome.judge, outcome.floors, prices=outcome.prices)
    if opts.scoreboard:
        _gate.print_scoreboard(outcome.record)
    gate_code = _gate.report(outcome.gates, opts.accept)
    _gate.print_saved(opts, outcome.record, outcome.saved, outcome.save_blocked, outcome.save_error)
    click.echo(
        f"tapes: {display_path(outcome.tapes or outcome.record_path)}/  "
        f"record: {display_path(outcome.record_path)}",
        err=True,
    )
    if outcome.cassettes:
        click.echo(f"cassettes updated: {len(outcome.cassettes)} tape(s)", err=True)
    if outcome.unrecorded:
        kept = sum(1 for u in outcome.unrecorded if u.kept)
        click.echo(
            f"evaltape: {len(outcome.unrecorded)} attempt(s) not recorded into the cassettes "
            f"({kept} recorded session(s) kept as they were)",
            err=True,
        )
    for line in render_volatile(outcome.volatile):
        click.echo(line, err=True)
    lost = [r for r in pool.results if r.verdict is Verdict.ERROR and not r.session_id]
    if lost:
        click.echo(
            f"evaltape: {len(lost)} attempt(s) could not run at all, first: {lost[0].reason}",
            err=True,
        )
    if pool.not_started:
        click.echo(
            f"budget reached: {pool.not_started} attempt(s) not started; "
            "finished attempts were kept",
            err=True,
        )
    if pool.stopped is StopKind.AUTH:
        fail(f"{pool.reason}; check OPENAI_API_KEY / ANTHROPIC_API_KEY", EXIT_AUTH)
    if pool.stopped is StopKind.LIMIT:
        fail(f"{pool.reason}; finished attempts were kept", EXIT_TIME_LIMIT)
    if pool.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished attempts were kept", err=True)
        return EXIT_INTERRUPTED
    return (
        gate_code
        or entry_code
        or (EXIT_UNRECORDED if outcome.unrecorded else 0)
        or (EXIT_NOT_RUN if lost else 0)
    )
