"""``evaltape report RUN [-o FILE]``: one self-contained HTML page for a run."""

from __future__ import annotations

from pathlib import Path

import click

from .._config import Config, display_path
from ..outputs.console._progress import CliReporter
from ..outputs.console._terminal import EXIT_REFUSED, fail
from ..run._host import Host
from ..run._setup import sandbox_for
from ._boundary import boundary
from ._options import config_options

EXAMPLE = """\b
Example:
  evaltape report latest -o report.html
"""
"""The example ``--help`` ends with."""


@click.command(
    name="report",
    short_help="Write one self-contained HTML page (no CDN, no server) for a run.",
    epilog=EXAMPLE,
)
@click.argument("run", default="latest", metavar="[RUN]")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    metavar="FILE",
    help="The HTML file to write.",
)
@click.option(
    "--base",
    metavar="RUN",
    default=None,
    help="Compare against this run: both sides' rates and the cases that moved.",
)
@click.option("--full", is_flag=True, help="Show every trace value in full (long values are cut).")
@config_options("suites", "rubrics", "cassettes", "results", "hang_limit", "scorers", "sandbox")
@boundary
def report(run: str, output: Path, base: str | None, full: bool, config: Config) -> None:
    """Write one self-contained HTML page (no CDN, no server) for a run.

    RUN is `latest` (the default), a run id or unique prefix, a run record
    file, or an A/B run's id or folder (under RESULTS/ab/).  The page shows
    the decision and counts first, pass rates per suite and model with
    clustered intervals and a plot, every case's attempts with SPLIT marks and
    Wilson intervals, cost and tokens, replay changes with their diffs, and
    each attempt's trace turn by turn (as `evaltape trace` shows it).  An A/B
    run, or --base RUN, adds the per-case movement.  Exit 0; 2 on bad input.
    """
    from .._errors import ScoringError
    from ..cases._cases import CaseError
    from ..outputs.html import ReportRequest, make_report
    from .validate import report_problems

    sandbox = sandbox_for(config, Host.of_process(), CliReporter())
    request = ReportRequest(
        config=config,
        run=run,
        base=base,
        output=output,
        width=None if full else 400,
        sandbox=sandbox,
    )
    try:
        done = make_report(request)
    except CaseError as exc:
        report_problems(exc.problems)
    except ScoringError as exc:
        fail(str(exc), EXIT_REFUSED)
    r = done.report
    click.echo(
        f"{r.decision.word}: {r.decision.line} · "
        + ", ".join(f"{n} {name}" for name, n in r.counts)
    )
    click.echo(f"wrote {display_path(done.path)} ({done.size:,} bytes)")
