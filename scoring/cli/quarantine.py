"""``evaltape quarantine-report``: quarantine proposals from the history; runs nothing."""

from __future__ import annotations

import json

import click

from .._config import Config
from .._errors import ScoringError
from ..outputs.console._exit import fail
from ..verdicts._quarantine import (
    history_records,
    quarantine_report,
    render_report,
    report_to_json,
)
from ._boundary import boundary
from ._options import config_options
from .validate import load_or_report

EXAMPLE = """\b
Example:
  evaltape quarantine-report -m gpt-4.1-mini
"""
"""The example ``--help`` ends with."""


@click.command(
    "quarantine-report",
    short_help="Propose quarantines and releases from the pass rates the history shows.",
    epilog=EXAMPLE,
)
@click.option("-m", "--model", metavar="MODEL", default=None, help="Only this model's attempts.")
@click.option(
    "--since",
    metavar="RUN",
    default=None,
    help="Only RUN (a run id or unique prefix) and the runs started after it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@config_options("suites", "results")
@boundary
def quarantine_report_cmd(
    model: str | None, since: str | None, as_json: bool, config: Config
) -> None:
    """Propose quarantines and releases from the pass rates the history shows.

    Per case and model: attempts counted, runs, observed pass rate and its
    Wilson 95% interval, over the live runs history.jsonl lists (replays and
    rescores reuse recorded model outputs, so they are not counted).  Only
    attempts of each case's current definition count.  Proposes quarantine for
    a case that passes sometimes, release for a quarantined case that always
    passes, and lists a case that never passed as a finding; known gaps are
    listed apart.  Never edits a file.  Exit 0; 2 on bad input (a suite file,
    history line or run record that cannot be read, an unknown --since).
    """
    suites = load_or_report((), config)
    try:
        records = history_records(
            config.results,
            since=since,
            on_missing=lambda message: click.echo(f"evaltape: warning: {message}", err=True),
        )
    except ScoringError as exc:
        fail(str(exc), code=2)
        return
    report = quarantine_report(suites, records, model=model)
    if as_json:
        click.echo(json.dumps(report_to_json(report), sort_keys=True))
        return
    for line in render_report(report):
        click.echo(line)
