"""``evaltape replay``: run today's harness against recorded model outputs, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evaltape.scoring._cli._boundary import EXIT_INTERRUPTED, boundary, interruptible
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._cli._progress import CliReporter
from evaltape.scoring._cli._render_replay import print_report
from evaltape.scoring._config import Config, display_path
from evaltape.scoring.run._host import Host
from evaltape.scoring.run._replay import ReplayRequest, run_replay
from evaltape.scoring.run._stop import StopKind


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
    outcome = run_replay(
        ReplayRequest(
            config=config,
            host=Host.of_process(),
            tapes=tapes,
            latest=latest,
            lenient=lenient,
            cases_prefix=cases_prefix,
            suite=suite,
            allow_live_judge=allow_live_judge,
            export=export_traces,
            export_content=export_content,
            reporter=CliReporter(),
        )
    )
    if not outcome.ran:
        where = ", ".join(str(p) for p in tapes) or display_path(config.cassettes)
        click.echo(f"evaltape: no recorded live sessions of the selected cases in {where}")
        return
    assert outcome.record_path is not None
    print_report(outcome.pool, outcome.floors, outcome.judge, prices=outcome.prices)
    click.echo(f"record: {display_path(outcome.record_path)}", err=True)
    if outcome.pool.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished replays were kept", err=True)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(outcome.exit_code)
