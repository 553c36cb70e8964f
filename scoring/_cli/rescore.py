"""``evaltape rescore``: score recorded sessions again with today's cases and scorer."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NoReturn

import click

from evaltape.recorder import TapeError
from evaltape.scoring._cli._boundary import boundary
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._cli.live import interruptible
from evaltape.scoring._cli.validate import load_or_report
from evaltape.scoring._config import Config, display_path
from evaltape.scoring._errors import ScoringError
from evaltape.scoring.cases._cases import SelectionError, select
from evaltape.scoring.checks._scorers import make_scorer
from evaltape.scoring.judge._floors import case_floors, judge_check, judge_status
from evaltape.scoring.judge._judgement import DEFAULT_FLOORS, Floors, JudgeStatus
from evaltape.scoring.results._history import RunLog
from evaltape.scoring.results._record_files import read_record, resolve_run
from evaltape.scoring.results._records import RunKind, RunRecord, RunState, git_commit, make_run_id
from evaltape.scoring.run._rescore import (
    Flip,
    Rescored,
    RescoreOutcome,
    flips,
    rescore_run,
    rescore_tapes,
    summarize,
)
from evaltape.scoring.verdicts._replaycheck import TAPE_SUFFIX, find_tapes


def _error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"evaltape: error: {message}", err=True)
    raise SystemExit(code)


def _is_tape_argument(given: str) -> bool:
    path = Path(given)
    return path.is_dir() or (path.is_file() and not given.endswith(".json"))


LIVE_JUDGE_REFUSED = (
    "--allow-live-judge: a rescore never calls the judge (it writes no tape to record a new "
    "verdict on); replay the tapes with `evaltape replay --allow-live-judge` instead"
)
"""Why ``evaltape rescore --allow-live-judge`` is refused."""


def _where(r: Rescored) -> str:
    return f"{r.case.suite}/{r.case.id} {r.model} (attempt {r.attempt + 1})"


def rescore_judge_status(outcome: RescoreOutcome) -> JudgeStatus:
    """The judge status of a rescore: from the verdicts it reused (or could not)."""
    return judge_status(r.judgement for r in outcome.rescored)


def print_report(outcome: RescoreOutcome, floors: Floors = DEFAULT_FLOORS) -> None:
    """Every changed verdict, the per-suite summary, then the judge.

    Each judged attempt gets a ``judge`` line with its check (the reused
    verdict, or why it was not re-judged), each judged case and model its
    floor decision, and the last line is ``judge_status: ...``.
    """
    for r in flips(outcome):
        change = r.flip
        assert change is not None and r.before is not None
        if change is Flip.PASS_TO_FAIL:
            click.echo(f"FLIP pass->fail {_where(r)}: {r.reason}")
        elif change is Flip.FAIL_TO_PASS:
            click.echo(f"FLIP fail->pass {_where(r)}: was: {r.before_reason}")
        else:
            now = r.reason or "passed"
            click.echo(
                f"changed {r.before.value}->{r.verdict.value} {_where(r)}: {now} "
                f"(was: {r.before_reason or r.before.value})"
            )
    header: tuple[str, ...] = (
        "suite",
        "cases",
        "attempts",
        "passed",
        "before",
        "pass->fail",
        "fail->pass",
    )
    skipped_any = any(s.skipped for s in summarize(outcome))
    table: list[tuple[str, ...]] = [(*header, "skipped") if skipped_any else header]
    for s in summarize(outcome):
        before = "-" if s.passed_before is None else f"{s.passed_before}/{s.known_before}"
        row: tuple[str, ...] = (
            s.suite,
            str(s.cases),
            str(s.attempts),
            f"{s.passed}/{s.attempts}",
            before,
            str(s.pass_to_fail),
            str(s.fail_to_pass),
        )
        table.append((*row, str(s.skipped)) if skipped_any else row)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for line in table:
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        click.echo("  ".join(cells))
    for r in outcome.rescored:
        if r.judgement is not None:
            click.echo(f"judge {_where(r)}: {judge_check(r.judgement, floors).detail}")
    trials = ((r.case.id, r.model, r.judgement) for r in outcome.rescored)
    for case_id, model, check in case_floors(trials, floors):
        click.echo(
            f"judged {case_id} [{model}]: {'PASS' if check.passed else 'FAIL'} {check.detail}"
        )
    count = len(outcome.rescored)
    click.echo(
        f"{count} session{'' if count == 1 else 's'} rescored; no agent ran and no model was called"
    )
    click.echo(f"judge_status: {rescore_judge_status(outcome).value}")


@click.command(name="rescore")
@click.argument("sources", nargs=-1, metavar="[RUN | TAPE...]")
@click.option(
    "--latest",
    is_flag=True,
    help="Tapes: rescore only the newest session per case, model and attempt.",
)
@click.option(
    "--cases", "cases_prefix", metavar="PREFIX", help="Only cases whose id starts with PREFIX."
)
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--allow-live-judge",
    is_flag=True,
    help="Refused: a rescore never calls the judge; use `evaltape replay --allow-live-judge`.",
)
@config_options(
    "suites",
    "rubrics",
    "cassettes",
    "results",
    "hang_limit",
    "judge_mean_floor",
    "judge_trial_floor",
)
@boundary
@interruptible
def rescore(
    sources: tuple[str, ...],
    latest: bool,
    cases_prefix: str | None,
    suite: str | None,
    allow_live_judge: bool,
    config: Config,
) -> None:
    """Score recorded sessions again with today's cases and scorer; nothing runs.

    RUN is `latest`, a run id, a unique prefix of one, or the path of a run
    record: its attempts' sessions are rescored and compared with their
    recorded verdicts.  TAPE... are tape files or folders: every live session
    in them whose case exists today (default: every tape under the cassettes
    folder).  Prints each pass->fail and fail->pass, then a summary per
    suite, and writes a run record of kind rescore.  Judged cases reuse the
    judge verdict recorded for today's rubric and the recorded transcript,
    else are "not re-judged"; the last line is ``judge_status: ...``.  No
    agent runs, no model or judge is called, no socket is opened.  Exit 0
    whatever the verdicts; 2 on bad input (and on --allow-live-judge, which
    a rescore cannot honour); 130 when interrupted.
    """
    if allow_live_judge:
        _error(LIVE_JUDGE_REFUSED)
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    suites = load_or_report((), config)
    try:
        chosen = select(suites, cases_prefix=cases_prefix, suite=suite)
    except SelectionError as exc:
        _error(str(exc))
    cases = {c.id: c for s in suites for c in s.cases}
    wanted = {c.id for s in chosen for c in s.cases}
    scorer = make_scorer(hang_limit=config.hang_limit)
    tapes = [s for s in sources if _is_tape_argument(s)]
    runs = [s for s in sources if not _is_tape_argument(s)]
    for given in runs:
        if given.endswith(TAPE_SUFFIX) or given.endswith(os.sep):
            _error(f"{given}: no such tape or folder")
    if runs and (tapes or len(runs) > 1):
        _error("give one run (latest, a run id or a record path) or tape files, not both")
    run_id = make_run_id(time.time, os.urandom)
    try:
        if runs:
            source = read_record(resolve_run(config.results, runs[0]))
            note = f"rescore of run {source.run_id}"
            outcome = rescore_run(
                source,
                cases,
                scorer,
                cassettes=config.cassettes,
                results=config.results,
                selected=wanted.__contains__,
                floors=floors,
            )
        else:
            files: list[Path] = []
            for given in tapes or (str(config.cassettes),):
                path = Path(given)
                files.extend(find_tapes(path) if path.is_dir() else (path,))
            if not files:
                where = ", ".join(tapes) or display_path(config.cassettes)
                _error(f"no tapes (*{TAPE_SUFFIX}) in {where}")
            note = f"rescore of {len(files)} tape{'' if len(files) == 1 else 's'}"
            outcome = rescore_tapes(
                files,
                cases,
                scorer,
                cassettes=config.cassettes,
                results=config.results,
                selected=wanted.__contains__,
                latest=latest,
                floors=floors,
            )
    except (TapeError, ScoringError) as exc:
        _error(str(exc))
    for line in (*outcome.notes, *(s.line for s in outcome.skipped)):
        click.echo(f"evaltape: {line}", err=True)
    attempts = [r.attempt_result() for r in outcome.rescored]
    attempts += [s.attempt for s in outcome.skipped if s.attempt is not None]
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.RESCORE,
        state=RunState.RUNNING,
        started_at=time.time(),
        commit=git_commit(Path.cwd()),
        models=tuple(dict.fromkeys(a.model for a in attempts)),
        suites=tuple(dict.fromkeys(a.suite for a in attempts)),
        trials=max((a.attempt + 1 for a in attempts), default=1),
        total=len(attempts),
        attempts=tuple(attempts),
        notes=(note, f"judge_status: {rescore_judge_status(outcome).value}"),
    )
    log = RunLog(config.results, record, clock=time.time)
    log.finish(RunState.COMPLETED)
    print_report(outcome, floors)
    click.echo(f"record: {display_path(log.path)}", err=True)
