"""``evaltape replay``: run today's harness against recorded model outputs, offline."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from recorder import VERSION
from scoring._agents import AgentError, load_agent, parse_agent
from scoring._cases import SelectionError, select
from scoring._cli._boundary import boundary
from scoring._cli._options import config_options
from scoring._cli.live import interruptible
from scoring._cli.validate import load_or_report
from scoring._config import Config, display_path
from scoring._history import RunLog
from scoring._records import RunKind, RunRecord, RunState, git_commit, make_run_id
from scoring._replaycheck import (
    Change,
    find_recorded,
    find_tapes,
    replay_exit_code,
    scoreboard,
)
from scoring._runner import (
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

EXIT_INTERRUPTED = 130
"""Ctrl-C; finished replays are kept."""


def _error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"evaltape: error: {message}", err=True)
    raise SystemExit(code)


def print_report(outcome: PoolOutcome) -> None:
    """Regressions, improvements and stale recordings, then the scoreboard per suite."""
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
    click.echo(f"$0.00 spent; {tokens:,} tokens of recorded model calls replayed")


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
@config_options(
    "suites", "rubrics", "cassettes", "results", "agent", "base_url", "concurrency", "hang_limit"
)
@boundary
@interruptible
def replay(
    tapes: tuple[Path, ...],
    latest: bool,
    lenient: bool,
    cases_prefix: str | None,
    suite: str | None,
    config: Config,
) -> None:
    """Replay recorded live sessions with today's harness and compare verdicts.

    TAPES are tape files or folders (default: every tape under the cassettes
    folder).  Each recorded attempt is scored as recorded (rescored) and as
    replayed; pass->fail is a REGRESSION, fail->pass an improvement, a request
    the tape cannot answer a STALE recording.  Nothing leaves this machine.
    Exit 0: unchanged; 1: a regression; 2: bad input; 3: stale recordings but
    no regression; 130: interrupted.
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
        base_url=config.base_url or "https://api.openai.com/v1",
        hang_limit=config.hang_limit,
        harness_commit=commit,
        harness_version=VERSION,
        lenient=lenient,
    )
    progress = Progress(len(jobs))

    def on_result(result: JobResult) -> None:
        log.add(result.attempt_result())
        progress(result)

    outcome = run_pool(jobs, env, concurrency=config.concurrency, on_result=on_result)
    if outcome.stopped is None:
        log.finish(RunState.COMPLETED)
    else:
        log.finish(RunState.CANCELLED, notes=(outcome.reason,))
    print_report(outcome)
    click.echo(f"record: {display_path(log.path)}", err=True)
    if outcome.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished replays were kept", err=True)
        sys.exit(EXIT_INTERRUPTED)
    changes = [r.decision.change for r in outcome.results if r.decision is not None]
    sys.exit(replay_exit_code(changes))
