"""``evaltape live``: real attempts against a model API, each recorded to a tape."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, ParamSpec

import click

from evaltape.recorder import VERSION, Source, Usage
from evaltape.scoring._cli import _entry_flow, _gate_flow
from evaltape.scoring._cli import export as _export
from evaltape.scoring._cli._boundary import boundary
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._cli.validate import load_or_report
from evaltape.scoring._config import Config, display_path
from evaltape.scoring.cases._cases import SelectionError, Suite, select
from evaltape.scoring.cost._costs import CostRow, case_lines, compare_table, cost_line, usage_block
from evaltape.scoring.cost._costs import total as costs_total
from evaltape.scoring.cost._pricing import Prices, PricingError, built_in_prices, resolve_prices
from evaltape.scoring.judge._floors import case_floors, judge_status
from evaltape.scoring.judge._judge import Judge, resolve_judge
from evaltape.scoring.judge._judgement import (
    DEFAULT_FLOORS,
    Floors,
    JudgeError,
    JudgeState,
    JudgeStatus,
)
from evaltape.scoring.results._history import RunLog
from evaltape.scoring.results._records import (
    RunKind,
    RunRecord,
    RunState,
    Verdict,
    git_commit,
    make_run_id,
    tally,
)
from evaltape.scoring.run._agents import AgentError, AgentSpec, load_agent, parse_agent
from evaltape.scoring.run._runner import (
    JobEnv,
    JobResult,
    PoolOutcome,
    Progress,
    Stop,
    StopKind,
    default_scorer,
    plan_live,
    run_pool,
)
from evaltape.scoring.run._task import Agent
from evaltape.scoring.verdicts._entry_check import ENTRY_PURPOSE, ENTRY_TRIALS
from evaltape.scoring.verdicts._flips import render_flips, summarize_flips

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the agent's model calls go when neither config nor flag names a base URL."""

EXIT_AUTH = 2
"""The provider refused the credentials (also: bad input)."""
EXIT_TIME_LIMIT = 124
"""The overall ``--time-limit`` passed; finished attempts are kept."""
EXIT_INTERRUPTED = 130
"""Ctrl-C; finished attempts are kept."""

SOURCES = (Source.REAL_API, Source.LOCAL_SERVER, Source.SIMULATED)

P = ParamSpec("P")


def interruptible(func: Callable[P, None]) -> Callable[P, None]:
    """A Ctrl-C outside the pool (loading suites, writing the record) exits 130 quietly."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("evaltape: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)

    return wrapper


def _error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"evaltape: error: {message}", err=True)
    raise SystemExit(code)


def cases_and_agent(
    config: Config, cases_prefix: str | None, suite: str | None
) -> tuple[tuple[Suite, ...], tuple[Suite, ...], Agent | None, AgentSpec]:
    """Validate every suite, select the cases and load the agent, or exit 2 with one line.

    Returns all suites, the selected ones, the agent (None for a command
    agent) and its spec: everything checked before a token is spent.
    """
    suites = load_or_report((), config)
    try:
        chosen = select(suites, cases_prefix=cases_prefix, suite=suite)
    except SelectionError as exc:
        _error(str(exc))
    try:
        spec = parse_agent(config.agent)
        agent = load_agent(spec, Path.cwd())
    except AgentError as exc:
        _error(str(exc))
    return suites, chosen, agent, spec


def _models(model: str | None, compare: str | None, config: Config) -> tuple[str, ...]:
    if compare is not None:
        models = tuple(dict.fromkeys(m.strip() for m in compare.split(",") if m.strip()))
        if len(models) < 2:
            _error("--compare needs at least two models separated by commas (--compare m1,m2)")
        return models
    chosen = model or config.model
    if not chosen:
        _error('no model: pass -m MODEL, --compare m1,m2, or set "model" in evaltape.toml')
    return (chosen,)


def _tokens(usage: Usage) -> str:
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
            f"{_tokens(usage)}"
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
    click.echo(f"{len(outcome.results)} attempts · {_tokens(total)}")
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
            f"{_tokens(grading)}, not counted above"
        )
        grading_cost = costs_total(r.judge_cost for r in outcome.results)
        table = prices if prices is not None else built_in_prices()
        click.echo(f"grading cost: {cost_line(grading_cost, table)}, not counted above")
    click.echo(f"judge_status: {status.value}")
    return status


@click.command()
@click.option("-m", "--model", "model", metavar="MODEL", help="The model under test.")
@click.option(
    "--compare",
    metavar="M1,M2",
    help="Run every case with each of these models, through one pool.",
)
@click.option(
    "--cases", "cases_prefix", metavar="PREFIX", help="Only cases whose id starts with PREFIX."
)
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--source",
    type=click.Choice([s.value for s in SOURCES]),
    default=Source.REAL_API.value,
    show_default=True,
    help="Where the model responses come from, as recorded in each session.",
)
@click.option(
    "--source-detail",
    default="",
    metavar="TEXT",
    help='Free text naming the server and model, e.g. "llama.cpp SmolLM2-135M".',
)
@click.option("--seed", type=int, default=None, help="Sampling seed handed to the agent.")
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop the whole run after this long; finished attempts are kept (exit 124).",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="Retries of a 429, 5xx or connection failure before the agent sees it.",
)
@click.option(
    "--entry-check",
    is_flag=True,
    help="Run only the new or edited cases, 3 times each; exit 1 when a case's attempts split.",
)
@click.option(
    "--no-export",
    is_flag=True,
    help="Do not export traces, even when LANGFUSE_* or OTEL_EXPORTER_OTLP_* is set.",
)
@click.option(
    "--export-content",
    is_flag=True,
    help="Exported traces include prompts, messages, tool arguments and results, reasons "
    "and the judge's rationale (off by default).",
)
@config_options(
    "suites",
    "rubrics",
    "cassettes",
    "results",
    "agent",
    "base_url",
    "concurrency",
    "trials",
    "hang_limit",
    "judge_model",
    "judge_base_url",
    "judge_mean_floor",
    "judge_trial_floor",
    "pricing",
)
@_gate_flow.gate_options
@boundary
@interruptible
def live(
    model: str | None,
    compare: str | None,
    cases_prefix: str | None,
    suite: str | None,
    source: str,
    source_detail: str,
    seed: int | None,
    time_limit: float | None,
    retries: int,
    entry_check: bool,
    no_export: bool,
    export_content: bool,
    config: Config,
    gate_opts: _gate_flow.GateOptions,
) -> None:
    """Run the selected cases live: every attempt recorded to <cassettes>/<suite>/<case>.tape.

    Suites are validated first (bad input: FILE:LINE errors, exit 2, no model
    call).  Prints one line per finished attempt on stderr and a per-model
    summary.  Exit 0 when the run finished (whatever the verdicts; with --gate:
    1 when the gate closed), 2 on bad input or refused credentials, 124 at
    --time-limit, 130 on Ctrl-C.  The API
    key is read by the agent from the environment and never written.
    --entry-check runs only the cases no judged live attempt covers under their
    current definition, 3 times each, and exits 1 when one splits (a bad case)
    or could not be judged; nothing new: exit 0 and no model call.
    """
    if _gate_flow.listing(gate_opts, config):
        return
    trials = _gate_flow.trials(gate_opts, config)
    models = _models(model, compare, config)
    _gate_flow.check_named_baseline(gate_opts, config, models)
    _, chosen, agent, spec = cases_and_agent(config, cases_prefix, suite)
    try:
        prices = resolve_prices(config.pricing, os.environ)
    except PricingError as exc:
        _error(str(exc))
    if entry_check:
        _entry_flow.refuse_with(gate_opts.purpose, gate_opts.save)
        chosen = _entry_flow.select(config, chosen)
        if not chosen:
            return
        trials = ENTRY_TRIALS
    if source == Source.REAL_API.value and not (
        os.environ.get("OPENAI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
    ):
        click.echo(
            "evaltape: warning: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set", err=True
        )
    run_id = make_run_id(time.time, os.urandom)
    jobs = plan_live(chosen, models, trials, config.cassettes, run_id)
    base_url = config.base_url or DEFAULT_BASE_URL
    try:
        judge = resolve_judge(
            judge_model=config.judge_model,
            judge_base_url=config.judge_base_url,
            models_under_test=sorted({job.model for job in jobs}),
            base_url=base_url,
            environ=os.environ,
        )
    except JudgeError as exc:
        _error(f"judge refused: {exc}")
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    exporter = _export.start_export(
        enabled=not no_export,
        run_id=run_id,
        agent=config.agent or "agent",
        content=export_content,
        prices=prices,
    )
    commit = git_commit(Path.cwd())
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=time.time(),
        commit=commit,
        models=models,
        suites=tuple(s.name for s in chosen),
        trials=trials,
        purpose=ENTRY_PURPOSE if entry_check else gate_opts.purpose,
        total=len(jobs),
    )
    log = RunLog(config.results, record, clock=time.time)
    log.start()
    env = JobEnv(
        spec=spec,
        agent=agent,
        scorer=default_scorer(),
        stop=Stop(),
        base_url=base_url,
        source=Source(source),
        source_detail=source_detail,
        seed=seed,
        hang_limit=config.hang_limit,
        harness_commit=commit,
        harness_version=VERSION,
        retries=retries,
        judge=judge,
        floors=floors,
        prices=prices,
    )
    progress = Progress(len(jobs))

    def on_result(result: JobResult) -> None:
        log.add(result.attempt_result())
        progress(result)
        _export.submit(exporter, result)

    click.echo(
        f"run {run_id}: {len(jobs)} attempts ({_describe(chosen, models, trials)}), "
        f"concurrency {config.concurrency}",
        err=True,
    )
    judged_cases = sum(1 for s in chosen for c in s.cases if c.rubric is not None)
    if judge is not None:
        click.echo(f"judge: {judge.who}", err=True)
    elif judged_cases:
        click.echo(
            f"evaltape: warning: {judged_cases} judged case(s) and no judge_model: their "
            "replies are not graded (judge_status: not configured)",
            err=True,
        )
    outcome = run_pool(
        jobs, env, concurrency=config.concurrency, on_result=on_result, time_limit=time_limit
    )
    _export.finish_export(exporter, log)
    status = judge_status(r.judgement for r in outcome.results)
    gates: list[_gate_flow.ModelGate] = []
    if gate_opts.gate and outcome.stopped is None:
        gates = _gate_flow.decide(gate_opts, config, log.record, outcome, status, floors)
        log.update(**_gate_flow.outcome_fields(gates, gate_opts.accept))
    finish(log, outcome, notes=_judge_notes(judge, status))
    if trials > 1:  # before the summary, which ends with judge_status
        for line in render_flips(summarize_flips(log.record.attempts)):
            click.echo(line)
    entry_code = _entry_flow.report(log.record) if entry_check and outcome.stopped is None else 0
    print_summary(outcome, models, judge, floors, prices=prices)
    if gate_opts.scoreboard:
        _gate_flow.print_scoreboard(log.record)
    gate_code = _gate_flow.report(gates, gate_opts.accept)
    if outcome.stopped is None:
        _gate_flow.save(gate_opts, config, log.record)
    click.echo(
        f"tapes: {display_path(config.cassettes)}/  record: {display_path(log.path)}", err=True
    )
    if outcome.stopped is StopKind.AUTH:
        _error(f"{outcome.reason}; check OPENAI_API_KEY / ANTHROPIC_API_KEY", EXIT_AUTH)
    if outcome.stopped is StopKind.LIMIT:
        _error(f"{outcome.reason}; finished attempts were kept", EXIT_TIME_LIMIT)
    if outcome.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished attempts were kept", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if gate_code:
        sys.exit(gate_code)
    if entry_code:
        sys.exit(entry_code)


def _describe(suites: tuple[Suite, ...], models: tuple[str, ...], trials: int) -> str:
    cases = sum(len(s.cases) for s in suites)
    return f"{len(models)} model(s) x {cases} case(s) x {trials} trial(s)"


def finish(log: RunLog, outcome: PoolOutcome, *, notes: tuple[str, ...] = ()) -> None:
    """End the run record in the state the pool's outcome implies, with ``notes``."""
    if outcome.stopped is None:
        log.finish(RunState.COMPLETED, notes=notes)
    elif outcome.stopped is StopKind.AUTH:
        log.finish(RunState.FAILED, notes=(outcome.reason, *notes))
    else:
        log.finish(RunState.CANCELLED, notes=(outcome.reason, *notes))


def _judge_notes(judge: Judge | None, status: JudgeStatus) -> tuple[str, ...]:
    """Run-record notes: who graded (model and base URL host) and the judge status."""
    who = f"judge: {judge.who}" if judge is not None else "judge: none"
    return (who, f"judge_status: {status.value}")
