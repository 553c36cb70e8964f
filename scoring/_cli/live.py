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

from recorder import VERSION, Source, Usage
from scoring._agents import AgentError, AgentSpec, load_agent, parse_agent
from scoring._cases import SelectionError, Suite, select
from scoring._cli._boundary import boundary
from scoring._cli._options import config_options
from scoring._cli.validate import load_or_report
from scoring._config import Config, display_path
from scoring._history import RunLog
from scoring._judge import (
    DEFAULT_FLOORS,
    Floors,
    Judge,
    JudgeError,
    JudgeState,
    JudgeStatus,
    judge_floors,
    judge_status,
    resolve_judge,
)
from scoring._records import RunKind, RunRecord, RunState, git_commit, make_run_id, tally
from scoring._runner import (
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
from scoring._task import Agent

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
) -> JudgeStatus:
    """Per model ``model: passed/total`` and tokens, then the run's tokens, then the judge.

    Judged cases get one line each with their floor decision; grading tokens
    get a line of their own (never added to the agent's); the last line is
    ``judge_status: ...``, which a gate reads.  Returns that status.
    """
    attempts = [r.attempt_result() for r in outcome.results]
    total = Usage()
    for tally_row in tally(attempts, models):
        usage = Usage()
        for r in outcome.results:
            if r.job.model == tally_row.model:
                usage += r.usage
        total += usage
        errors = sum(1 for r in outcome.results if r.job.model == tally_row.model and r.tainted)
        extra = f", {errors} could not be judged" if errors else ""
        click.echo(
            f"{tally_row.model}: {tally_row.passed}/{tally_row.total} passed{extra} · "
            f"{_tokens(usage)}"
        )
    click.echo(f"{len(outcome.results)} attempts · {_tokens(total)}")
    return _print_judge(outcome, judge, floors)


def _print_judge(outcome: PoolOutcome, judge: Judge | None, floors: Floors) -> JudgeStatus:
    judged = [r for r in outcome.results if r.judgement is not None]
    status = judge_status(r.judgement for r in outcome.results)
    groups: dict[tuple[str, str], list[float | None]] = {}
    for r in judged:
        assert r.judgement is not None
        if r.judgement.state in (JudgeState.SCORED, JudgeState.UNSCORED):
            groups.setdefault((r.job.case.id, r.job.model), []).append(r.judgement.score)
    for (case_id, model), scores in sorted(groups.items()):
        check = judge_floors(scores, floors)
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
)
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
    config: Config,
) -> None:
    """Run the selected cases live: every attempt recorded to <cassettes>/<suite>/<case>.tape.

    Suites are validated first (bad input: FILE:LINE errors, exit 2, no model
    call).  Prints one line per finished attempt on stderr and a per-model
    summary.  Exit 0 when the run finished (whatever the verdicts), 2 on bad
    input or refused credentials, 124 at --time-limit, 130 on Ctrl-C.  The API
    key is read by the agent from the environment and never written.
    """
    models = _models(model, compare, config)
    _, chosen, agent, spec = cases_and_agent(config, cases_prefix, suite)
    if source == Source.REAL_API.value and not (
        os.environ.get("OPENAI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
    ):
        click.echo(
            "evaltape: warning: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set", err=True
        )
    run_id = make_run_id(time.time, os.urandom)
    jobs = plan_live(chosen, models, config.trials, config.cassettes, run_id)
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
    commit = git_commit(Path.cwd())
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=time.time(),
        commit=commit,
        models=models,
        suites=tuple(s.name for s in chosen),
        trials=config.trials,
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
    )
    progress = Progress(len(jobs))

    def on_result(result: JobResult) -> None:
        log.add(result.attempt_result())
        progress(result)

    click.echo(
        f"run {run_id}: {len(jobs)} attempts ({_describe(chosen, models, config.trials)}), "
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
    status = judge_status(r.judgement for r in outcome.results)
    finish(log, outcome, notes=_judge_notes(judge, status))
    print_summary(outcome, models, judge, floors)
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
