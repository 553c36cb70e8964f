"""``evaltape history``: the finished runs recorded in the results folder, newest last."""

from __future__ import annotations

import json
import time

import click

from .._config import Config
from ..results._history import (
    HistoryEntry,
    HistoryProblem,
    entry_to_json,
    read_history,
)
from ._boundary import boundary
from ._options import config_options


def format_time(unix: float) -> str:
    """``2026-11-29 23:15:00Z``: UTC, to the second."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(unix))


def describe_entry(entry: HistoryEntry) -> str:
    """One history row: time, run id, kind, commit, state, passed/total per model, flips."""
    cells = [
        format_time(entry.started_at),
        entry.run_id,
        entry.kind.value.ljust(7),
        (entry.commit or "-").ljust(7),
        entry.state.value.ljust(9),
    ]
    cells.extend(f"{m.model} {m.passed}/{m.total}" for m in entry.models)
    if entry.inconsistent:
        cells.append(f"~{len(entry.inconsistent)} inconsistent")
    if entry.gate:
        cells.append(f"gate {entry.gate}" + (" (blocked)" if entry.gate_blocked else ""))
    return "  ".join(cells)


EXAMPLE = """\b
Example:
  evaltape history --limit 10
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="List finished runs from <results>/history.jsonl, newest last.",
    epilog=EXAMPLE,
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Show only the N most recent runs.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per run (history.jsonl lines)."
)
@config_options("results")
@boundary
def history(limit: int | None, as_json: bool, config: Config) -> None:
    """List finished runs from <results>/history.jsonl, newest last.

    Each row: start time (UTC), run id, kind, commit, final state, passed/total
    attempts per model, and "~N inconsistent" when N cases had attempts that
    disagreed.  A damaged line is reported on stderr as history.jsonl:LINE and
    skipped; the command then exits 1 after printing the rest.
    """
    damaged = False

    def report(problem: HistoryProblem) -> None:
        nonlocal damaged
        damaged = True
        click.echo(f"evaltape: {problem.message}", err=True)

    entries = read_history(config.results, on_problem=report)
    if not entries and not damaged:
        click.echo(f"evaltape: no runs recorded in {config.results}", err=True)
    shown = entries[-limit:] if limit is not None else entries
    for entry in shown:
        if as_json:
            click.echo(json.dumps(entry_to_json(entry), sort_keys=True))
        else:
            click.echo(describe_entry(entry))
    if damaged:
        raise SystemExit(1)
