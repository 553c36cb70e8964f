"""``evaltape replay``: run today's harness against recorded model outputs, offline."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from evaltape.recorder import VERSION, Usage
from evaltape.scoring._cli import export as _export
from evaltape.scoring._cli._boundary import boundary
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._cli.live import DEFAULT_BASE_URL, cases_and_agent, interruptible
from evaltape.scoring._config import Config, display_path
from evaltape.scoring.cost._costs import cost_line
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
from evaltape.scoring.results._records import RunKind, RunRecord, RunState, git_commit, make_run_id
from evaltape.scoring.run._runner import (
    JobEnv,
    JobResult,
    PoolOutcome,
    Progress,
    Stop,
    StopKind,
    default_scorer,
    plan_replay,
    run_pool,
)
from evaltape.scoring.verdicts._replaycheck import (
    Change,
    find_recorded,
    find_tapes,
    replay_exit_code,
    scoreboard,
)

EXIT_INTERRUPTED = 130
"""Ctrl-C; finished replays are kept."""


def _error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"evaltape: error: {message}", err=True)
    raise SystemExit(code)


def print_report(
    outcome: PoolOutcome,
    floors: Floors = DEFAULT_FLOORS,
    judge: Judge | None = None,
    *,
    prices: Prices | None = None,
) -> JudgeStatus:
    """Regressions, improvements and stale recordings, the scoreboard per suite, the judge.

    As in ``evaltape live``: each judged case and model gets its floor
    decision, a judge asked live (``--allow-live-judge``) gets a line with its
    tokens, and the last line is ``judge_status: ...``.  Returns that status.
    """
    labelled = {
        Change.REGRESSION: "REGRESSION",
        Change.IMPROVEMENT: "improvement",
        Change.STALE: "STALE",
    }
    for change, word in labelled.items():
        for r in outcome.results:
            d = r.decision
            if d is None or d.change is not change:
                continue
            j = r.job
            where = f"{j.case.suite}/{j.case.id} {j.model} (attempt {j.attempt + 1})"
            if change is Change.STALE:
                why = d.detail
            elif change is Change.REGRESSION:
                why = f"recorded: pass; replayed: {d.replayed.reason if d.replayed else ''}"
            else:
                why = f"recorded: {d.rescored.reason}; replayed: pass"
            click.echo(f"{word} {where}: {why}")
    rows = [(r.job.case.suite, r.job.case.id, r.decision) for r in outcome.results if r.decision]
    header = ("suite", "cases", "attempts", "rescored", "replayed", "regress", "improve", "stale")
    table = [header]
    for b in scoreboard((s, c, d) for s, c, d in rows if d is not None):
        table.append(
            (
                b.suite,
                str(b.cases),
                str(b.attempts),
                f"{b.rescored_passed}/{b.attempts}",
                f"{b.replayed_passed}/{b.attempts}",
                str(b.regressions),
                str(b.improvements),
                str(b.stale),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        click.echo("  ".join(cells))
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
    recorded = costs_total(r.cost for r in outcome.results)
    vintage = prices if prices is not None else built_in_prices()
    click.echo(f"what they cost when recorded: {cost_line(recorded, vintage, 'recorded')}")
    trials = ((r.job.case.id, r.job.model, r.judgement) for r in outcome.results)
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
    return status


@click.command(name="replay")
@click.argument("tapes", nargs=-1, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option(
    "--latest", is_flag=True, help="Replay only the newest session per case, model and attempt."
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Serve the nearest recorded response to a changed request (the attempt is tainted).",
)
@click.option(
    "--cases", "cases_prefix", metavar="PREFIX", help="Only cases whose id starts with PREFIX."
)
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--allow-live-judge",
    is_flag=True,
    help="Ask the configured judge (judge_model) when the tape holds no verdict for the "
    "replayed transcript; the call is recorded on the replay's tape.  Default: never.",
)
@click.option(
    "--export",
    "export_traces",
    is_flag=True,
    help="Export the replayed attempts as traces (LANGFUSE_* or OTEL_EXPORTER_OTLP_*). "
    "Default: replays are never exported.",
)
@click.option(
    "--export-content",
    is_flag=True,
    help="With --export: include prompts, messages, tool arguments and results, reasons "
    "and the judge's rationale.",
)
@config_options(
    "suites",
    "rubrics",
    "cassettes",
    "results",
    "agent",
    "base_url",
    "concurrency",
    "hang_limit",
    "judge_model",
    "judge_base_url",
    "judge_mean_floor",
    "judge_trial_floor",
    "pricing",
)
@boundary
@interruptible
def replay(
    tapes: tuple[Path, ...],
    latest: bool,
    lenient: bool,
    cases_prefix: str | None,
    suite: str | None,
    allow_live_judge: bool,
    export_traces: bool,
    export_content: bool,
    config: Config,
) -> None:
    """Replay recorded live sessions with today's harness and compare verdicts.

    TAPES are tape files or folders (default: every tape under the cassettes
    folder).  Each recorded attempt is scored as recorded (rescored) and as
    replayed; pass->fail is a REGRESSION, fail->pass an improvement, a request
    the tape cannot answer a STALE recording.  Judged cases reuse the judge
    verdict recorded for the same rubric and transcript, else are "not
    re-judged"; only --allow-live-judge lets the configured judge be asked.
    Without it nothing leaves this machine.  The last summary line is
    ``judge_status: ...``.  Exit 0: unchanged; 1: a regression; 2: bad input
    (or a refused judge); 3: stale recordings but no regression; 130:
    interrupted.
    """
    suites, chosen, agent, spec = cases_and_agent(config, cases_prefix, suite)
    prices = _prices(config)
    files: list[Path] = []
    for given in tapes or (config.cassettes,):
        files.extend(find_tapes(given) if given.is_dir() else (given,))
    all_cases = {c.id: c for s in suites for c in s.cases}
    found = find_recorded(files, chosen, latest=latest, all_cases=all_cases)
    for line in (*found.notes, *found.orphans):
        click.echo(f"evaltape: {line}", err=True)
    if not found.recorded:
        where = ", ".join(str(p) for p in tapes) or display_path(config.cassettes)
        click.echo(f"evaltape: no recorded live sessions of the selected cases in {where}")
        return
    run_id = make_run_id(time.time, os.urandom)
    jobs = plan_replay(((r.case, r.session) for r in found.recorded), config.results, run_id)
    base_url = config.base_url or DEFAULT_BASE_URL
    judge = _live_judge(config, base_url, {j.model for j in jobs}) if allow_live_judge else None
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    exporter = None
    if export_traces:
        exporter = _export.start_export(
            enabled=True,
            run_id=run_id,
            agent=config.agent or "agent",
            content=export_content,
            prices=prices,
        )
    commit = git_commit(Path.cwd())
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.REPLAY,
        state=RunState.RUNNING,
        started_at=time.time(),
        commit=commit,
        models=tuple(dict.fromkeys(j.model for j in jobs)),
        suites=tuple(dict.fromkeys(j.case.suite for j in jobs)),
        total=len(jobs),
        notes=("lenient",) if lenient else (),
    )
    log = RunLog(config.results, record, clock=time.time)
    log.start()
    env = JobEnv(
        spec=spec,
        agent=agent,
        scorer=default_scorer(),
        stop=Stop(),
        base_url=base_url,
        hang_limit=config.hang_limit,
        harness_commit=commit,
        harness_version=VERSION,
        lenient=lenient,
        judge=judge,
        floors=floors,
        allow_live_judge=allow_live_judge,
        prices=prices,
    )
    progress = Progress(len(jobs))
    if judge is not None:
        click.echo(f"judge: {judge.who} (asked only when no recorded verdict matches)", err=True)

    def on_result(result: JobResult) -> None:
        log.add(result.attempt_result())
        progress(result)
        _export.submit(exporter, result)

    outcome = run_pool(jobs, env, concurrency=config.concurrency, on_result=on_result)
    _export.finish_export(exporter, log)
    status = judge_status(r.judgement for r in outcome.results)
    who = (f"judge: {judge.who}",) if judge is not None else ()
    notes = (*who, f"judge_status: {status.value}")
    if outcome.stopped is None:
        log.finish(RunState.COMPLETED, notes=notes)
    else:
        log.finish(RunState.CANCELLED, notes=(outcome.reason, *notes))
    print_report(outcome, floors, judge, prices=env.prices)
    click.echo(f"record: {display_path(log.path)}", err=True)
    if outcome.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished replays were kept", err=True)
        sys.exit(EXIT_INTERRUPTED)
    changes = [r.decision.change for r in outcome.results if r.decision is not None]
    sys.exit(replay_exit_code(changes))


def _prices(config: Config) -> Prices:
    """The price table recorded calls are costed with; exit 2 on a bad override file."""
    try:
        return resolve_prices(config.pricing, os.environ)
    except PricingError as exc:
        _error(str(exc))


def _live_judge(config: Config, base_url: str, models: set[str]) -> Judge:
    """The judge ``--allow-live-judge`` may ask; exit 2 when none is configured or it is refused."""
    try:
        judge = resolve_judge(
            judge_model=config.judge_model,
            judge_base_url=config.judge_base_url,
            models_under_test=sorted(models),
            base_url=base_url,
            environ=os.environ,
        )
    except JudgeError as exc:
        _error(f"judge refused: {exc}")
    if judge is None:
        _error("--allow-live-judge needs a judge: set judge_model (and judge_base_url)")
    return judge
