"""``evaltape coverage``: what the recorded attempts can catch, per tool and per case."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .._config import Config
from ..outputs.console._coverage import coverage_lines
from ..outputs.console._progress import CliReporter
from ..outputs.formats._coverage_json import coverage_json
from ..run._coverage import CoverageRequest, run_coverage
from ..run._host import Host
from ._boundary import boundary, interruptible
from ._options import cases_option, config_options

EXAMPLE = """\b
Example:
  evaltape coverage cassettes/simulated --mutate
"""
"""The example ``--help`` ends with."""


@click.command(
    "coverage",
    short_help="Say what the recorded attempts can catch, per tool and per case.",
    epilog=EXAMPLE,
)
@click.argument("tapes", nargs=-1, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@cases_option
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--mutate",
    is_flag=True,
    help="Plant each standard mutation in a temporary copy of the (Python) agent's tools, "
    "one at a time, replay the tapes, and report which were caught (the mutation score).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead.")
@config_options(
    "suites", "rubrics", "cassettes", "results", "agent", "hang_limit", "scorers", "sandbox",
    "scrub",
)  # fmt: skip
@boundary
@interruptible
def coverage(
    tapes: tuple[Path, ...],
    cases: tuple[str, ...],
    suite: str | None,
    mutate: bool,
    as_json: bool,
    config: Config,
) -> None:
    """Say what the recorded attempts can catch, per tool and per case.

    TAPES are tape files or folders (default: every tape under the cassettes
    folder).  Each recorded live session is scored with today's cases (no
    agent runs, no model is called).  Per suite: a table per tool (calls;
    attempts that pass a case with an outcome check, pass one without, or
    fail; calls whose result no later request carries) and per case, one
    sentence per tool, and a verdict line: a side-effect bug can become a
    REGRESSION only in a tool that passing, outcome-checked attempts call.
    --mutate proves it: each standard mutation (a write loses its last byte,
    a write is skipped, a tool returns an empty result, a sorted listing comes
    back reversed) is planted in a temporary copy of the agent and the tapes
    replayed.  Exit 0; 2 on bad input (or when the intact agent does not
    replay unchanged under --mutate); 130 when interrupted.
    """
    outcome = run_coverage(
        CoverageRequest(
            config=config,
            host=Host.of_process(),
            tapes=tapes,
            cases=cases,
            suite=suite,
            mutate=mutate,
            reporter=CliReporter(),
        )
    )
    for line in outcome.skipped:
        click.echo(f"evaltape: {line}", err=True)
    if as_json:
        click.echo(json.dumps(coverage_json(outcome), indent=2))
        return
    for line in coverage_lines(outcome):
        click.echo(line)
