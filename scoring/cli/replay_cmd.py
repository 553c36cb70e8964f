"""``evaltape replay``: run today's harness against recorded model outputs, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import click

from .._config import Config, display_path
from ..outputs.console._progress import CliReporter
from ..outputs.console._replay import print_report
from ..outputs.console._terminal import EXIT_INTERRUPTED, fail
from ..outputs.formats import from_replay, replay_json
from ..run._host import Host
from ..run._replay import ReplayRequest, run_replay
from ..run._stop import StopKind
from ._boundary import boundary, interruptible
from ._options import (
    CommonFirst,
    ResultFiles,
    cases_option,
    config_options,
    result_options,
)
from ._results_out import exit_code_of, text_report, write_results

EXAMPLE = """\b
Example:
  evaltape replay --cases fix- --junit replay.xml
"""
"""The example ``--help`` ends with."""


@click.command(
    "replay",
    cls=CommonFirst,
    common=(
        "latest",
        "lenient",
        "verbose",
        "cases",
        "suite",
        "agent",
        "price",
        "pricing",
        "junit_file",
        "config_file",
    ),
    short_help="Replay recorded live sessions with today's harness and compare verdicts.",
    epilog=EXAMPLE,
)
@click.argument("tapes", nargs=-1, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option(
    "--latest", is_flag=True, help="Replay only the newest session per case, model and attempt."
)
@click.option(
    "--assume-same-model",
    "--lenient",
    "lenient",
    is_flag=True,
    help="Where a request no longer matches, serve the recorded response anyway and finish "
    "the attempt: reports what it would score if the model answered as recorded (an "
    "assumption; the harness change still decides the exit code).",
)
@click.option(
    "--allow-unrecorded",
    is_flag=True,
    help="A selected case with no recording is listed, not a failure.",
)
@click.option("-v", "--verbose", is_flag=True, help="One line per replayed attempt.")
@cases_option
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
    "upstream",
    "concurrency",
    "executor",
    "ray_address",
    "ray_working_dir",
    "hang_limit",
    "scorers",
    "judge_model",
    "judge_base_url",
    "judge_constrain",
    "judge_mean_floor",
    "judge_trial_floor",
    "pricing",
    "price",
    "sandbox",
    "scrub",
)
@result_options
@boundary
@interruptible
def replay(
    tapes: tuple[Path, ...],
    latest: bool,
    lenient: bool,
    allow_unrecorded: bool,
    verbose: bool,
    cases: tuple[str, ...],
    suite: str | None,
    allow_live_judge: bool,
    export_traces: bool,
    export_content: bool,
    config: Config,
    results: ResultFiles,
) -> None:
    """Replay recorded live sessions with today's harness and compare verdicts.

    TAPES are tape files or folders (default: every tape under the cassettes
    folder).  Each recorded attempt is scored as recorded (rescored) and as
    replayed.  pass->fail is a REGRESSION, fail->pass an improvement.  Each
    session is classified as a whole by what the harness changed: a tool
    result, a text agent's observation (a user message after the model spoke),
    the conversation, or a harness that raised or stopped early (HARNESS
    CHANGED: fix the harness, never re-record; it wins over a prompt edit in
    the same session), or only harness text such as a prompt or tool
    description (STALE: record it live again).  Judged cases reuse the judge
    verdict recorded for the same rubric and transcript, else are "not
    re-judged"; only --allow-live-judge lets the configured judge be asked.
    The last line says the decision in words.  Exit 0: unchanged
    (improvements allowed); 1: a regression or a harness change; 2: bad
    input, or something could not be tested (no tapes, an unreadable tape, a
    case with no recording, an attempt that could not run, no attempt
    replayed); 3: only stale recordings; 130: interrupted.
    """
    host = Host.of_process()
    outcome = run_replay(
        ReplayRequest(
            config=config,
            host=host,
            tapes=tapes,
            latest=latest,
            lenient=lenient,
            allow_unrecorded=allow_unrecorded,
            cases=cases,
            suite=suite,
            allow_live_judge=allow_live_judge,
            export=export_traces,
            export_content=export_content,
            reporter=CliReporter(),
        )
    )

    def render() -> int:
        if not outcome.ran:
            where = ", ".join(str(p) for p in tapes) or display_path(config.cassettes)
            for line in outcome.untested[:-1]:
                click.echo(f"evaltape: error: {line}", err=True)
            last = outcome.untested[-1:] or (
                f"no recorded live session of the selected cases in {where}; nothing was tested",
            )
            fail(last[0], 2)
        assert outcome.record_path is not None
        print_report(
            outcome.pool,
            outcome.floors,
            outcome.judge,
            prices=outcome.prices,
            untested=outcome.untested,
            verbose=verbose,
            assumed=lenient,
            errors=len(outcome.errors),
        )
        click.echo(f"record: {display_path(outcome.record_path)}", err=True)
        if outcome.pool.stopped is StopKind.INTERRUPT:
            click.echo("evaltape: interrupted; finished replays were kept", err=True)
            return EXIT_INTERRUPTED
        return outcome.exit_code

    with text_report(results):
        code = exit_code_of(render)
    found = attrs.evolve(from_replay(outcome), exit_code=code)
    write_results(results, found, lambda: replay_json(outcome, found), host)
    sys.exit(code)
