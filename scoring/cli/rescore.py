"""``evaltape rescore``: score recorded sessions again with today's cases and scorer."""

from __future__ import annotations

import click

from .._config import Config, display_path
from ..outputs.console._progress import CliReporter
from ..outputs.console._rescore import print_report
from ..outputs.formats import from_rescore, rescore_json
from ..run._host import Host
from ..run._rescore import RescoreRequest, run_rescore
from ..run._setup import RunRefused
from ._boundary import boundary, interruptible
from ._options import (
    ResultFiles,
    cases_option,
    config_options,
    result_options,
)
from ._results_out import text_report, write_results

LIVE_JUDGE_REFUSED = (
    "--allow-live-judge: a rescore never calls the judge (it writes no tape to record a new "
    "verdict on); replay the tapes with `evaltape replay --allow-live-judge` instead"
)
"""Why ``evaltape rescore --allow-live-judge`` is refused."""


EXAMPLE = """\b
Example:
  evaltape rescore latest --junit rescore.xml
"""
"""The example ``--help`` ends with."""


@click.command(
    "rescore",
    short_help="Score recorded sessions again with today's cases and scorer; nothing runs.",
    epilog=EXAMPLE,
)
@click.argument("sources", nargs=-1, metavar="[RUN | TAPE...]")
@click.option(
    "--latest",
    is_flag=True,
    help="Tapes: rescore only the newest session per case, model and attempt.",
)
@cases_option
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
    "scorers",
    "concurrency",
    "executor",
    "ray_address",
    "ray_working_dir",
    "judge_mean_floor",
    "judge_trial_floor",
    "sandbox",
)
@result_options
@boundary
@interruptible
def rescore(
    sources: tuple[str, ...],
    latest: bool,
    cases: tuple[str, ...],
    suite: str | None,
    allow_live_judge: bool,
    config: Config,
    results: ResultFiles,
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
        raise RunRefused(LIVE_JUDGE_REFUSED)
    host = Host.of_process()
    request = RescoreRequest(
        config=config,
        host=host,
        sources=sources,
        latest=latest,
        cases=cases,
        suite=suite,
        reporter=CliReporter(),
    )
    done = run_rescore(request)
    for line in (*done.rescore.notes, *(s.line for s in done.rescore.skipped)):
        click.echo(f"evaltape: {line}", err=True)
    with text_report(results):
        print_report(done.rescore, done.floors)
    click.echo(f"record: {display_path(done.record_path)}", err=True)
    found = from_rescore(done)
    write_results(results, found, lambda: rescore_json(done, found), host)
