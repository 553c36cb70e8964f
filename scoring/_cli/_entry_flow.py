"""``evaltape live --entry-check``: pick the new or edited cases, then judge their three attempts.

The decisions are ``scoring._entry_check``'s; this module reads the history,
prints, and turns the outcome into an exit status.
"""

from __future__ import annotations

import click

from evaltape.scoring._cli._boundary import fail
from evaltape.scoring._config import Config
from evaltape.scoring._errors import ScoringError
from evaltape.scoring.cases._cases import Suite
from evaltape.scoring.results._records import RunRecord
from evaltape.scoring.verdicts._entry_check import (
    entry_exit_code,
    entry_results,
    render_entry_results,
    render_selection,
    select_unchecked,
)
from evaltape.scoring.verdicts._quarantine import history_records


def refuse_with(purpose: str, save: bool) -> None:
    """Exit 2 when the entry check is combined with a gate, scoreboard or baseline save."""
    if purpose or save:
        fail(
            "--entry-check runs new and edited cases on their own; it cannot be combined "
            "with --gate, --scoreboard or --save-baseline",
            code=2,
        )


def select(config: Config, chosen: tuple[Suite, ...]) -> tuple[Suite, ...]:
    """The selected suites pruned to new or edited cases; () after saying there are none.

    A damaged history line or run record exits 2 with one line.
    """
    try:
        records = history_records(
            config.results,
            on_missing=lambda message: click.echo(f"evaltape: warning: {message}", err=True),
        )
    except ScoringError as exc:
        fail(str(exc), code=2)
        return ()
    pruned, candidates = select_unchecked(chosen, records)
    for line in render_selection(candidates):
        click.echo(line, err=True)
    if not pruned:
        click.echo("entry check: no new or edited case; nothing was run")
    return pruned


def report(record: RunRecord) -> int:
    """Print each case's entry verdict and return the exit status (1: bad or not checked)."""
    results = entry_results(record.attempts)
    for line in render_entry_results(results):
        click.echo(line)
    return entry_exit_code(results)
