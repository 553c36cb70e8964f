"""``evaltape trace [RUN] [--cases ID,...]``: a run's attempts, turn by turn."""

from __future__ import annotations

import click

from evaltape.recorder import TapeError

from .._config import Config, display_path
from .._errors import ScoringError
from ..cases._cases import SelectionError, match_ids
from ..cases._fields import suggest
from ..checks._scorers import make_scorer
from ..outputs.console._progress import CliReporter
from ..outputs.console._terminal import EXIT_REFUSED, fail, printable
from ..results._record_files import read_record, resolve_run
from ..run._host import Host
from ..run._setup import sandbox_for
from ..run.rescore._trace import Cut, format_case_lines, run_cases, trace_case
from ._boundary import boundary
from ._options import cases_option, config_options
from .validate import load_or_report


def _deprecated_case(ctx: click.Context, param: click.Parameter, value: str | None) -> object:
    """``--case ID`` still works, and says that ``--cases`` is the spelling of every command."""
    if value is not None:
        click.echo(
            f"evaltape: warning: --case is deprecated; use --cases {value} (as every command)",
            err=True,
        )
    return value


EXAMPLE = """\b
Example:
  evaltape trace latest --cases fix-off-by-one -m gpt-4.1-mini
"""
"""The example ``--help`` ends with."""


@click.command(
    "trace",
    short_help="Show a run's attempts at the selected cases turn by turn, read from their tapes.",
    epilog=EXAMPLE,
)
@click.argument("run", default="latest", metavar="[RUN]")
@click.option(
    "--case",
    "case_id",
    metavar="ID",
    hidden=True,
    callback=_deprecated_case,
    help="Deprecated spelling of --cases ID (one exact id).",
)
@cases_option
@click.option("-m", "--model", metavar="MODEL", help="Only this model's attempts.")
@click.option("--full", is_flag=True, help="Show every value in full (long values are cut).")
@click.option(
    "--width",
    type=click.IntRange(min=20, max=100_000),
    default=400,
    show_default=True,
    metavar="CHARS",
    help="Characters of one value shown before it is cut.",
)
@config_options("suites", "rubrics", "cassettes", "results", "hang_limit", "sandbox")
@boundary
def trace(
    run: str,
    case_id: str | None,
    cases: tuple[str, ...],
    model: str | None,
    full: bool,
    width: int,
    config: Config,
) -> None:
    """Show a run's attempts at the selected cases turn by turn, read from their tapes.

    RUN is `latest` (the default), a run id, a unique prefix of one, or the
    path of a run record.  Without --cases, lists the run's cases with their
    verdict counts.  With --cases (exact ids or prefixes,
    comma-separated or repeated, as in every command), each attempt is one block: every turn's
    thinking and text, each tool call's exact arguments and the result the
    tool returned, failures, how the session ended, and the verdict scored
    now with today's case and scorer.  Exit 0; 2 on bad input.
    """
    try:
        path = resolve_run(config.results, run)
        record = read_record(path)
    except ScoringError as exc:
        fail(str(exc), EXIT_REFUSED)
    if case_id is None and not cases:
        lines = format_case_lines(run_cases(record))
        click.echo(
            f"run {record.run_id} ({record.kind.value}, {record.state.value}): "
            f"{len(lines)} case{'' if len(lines) == 1 else 's'} · {display_path(path)}"
        )
        for line in lines:
            click.echo("  " + printable(line))
        if lines:
            click.echo("show one with: evaltape trace RUN --cases ID", err=True)
        return
    ids = tuple(dict.fromkeys(a.case_id for a in record.attempts))
    if case_id is not None and case_id not in ids:
        fail(
            f'run {record.run_id} has no attempt of case "{case_id}"{suggest(case_id, ids)}; '
            f"its cases are {', '.join(ids) or 'none'}",
            EXIT_REFUSED,
        )
    try:
        wanted = match_ids(cases, ids, f"run {record.run_id}") if cases else set()
    except SelectionError as exc:
        fail(str(exc), EXIT_REFUSED)
    chosen = [i for i in ids if i == case_id or i in wanted]
    for one in chosen:
        models = tuple(dict.fromkeys(a.model for a in record.attempts if a.case_id == one))
        if model is not None and model not in models:
            fail(
                f'case "{one}" did not run with model "{model}" in run {record.run_id}; '
                f"it ran with {', '.join(models)}",
                EXIT_REFUSED,
            )
    sandbox = sandbox_for(config, Host.of_process(), CliReporter())
    suites = load_or_report((), config)
    cases_by_id = {c.id: c for s in suites for c in s.cases}
    blocks: list[list[str]] = []
    for one in chosen:
        try:
            blocks.extend(
                trace_case(
                    record,
                    one,
                    cases_by_id,
                    make_scorer(hang_limit=config.hang_limit, sandbox=sandbox),
                    cassettes=config.cassettes,
                    results=config.results,
                    model=model,
                    cut=Cut(limit=None if full else width),
                )
            )
        except TapeError as exc:
            fail(str(exc), EXIT_REFUSED)
    for i, block in enumerate(blocks):
        if i:
            click.echo("")
        for line in block:
            click.echo(printable(line))
