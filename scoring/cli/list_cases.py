"""``evaltape list``: show which suites and cases the current flags select."""

from __future__ import annotations

import click

from .._config import Config
from ..cases._cases import SelectionError, select
from ._options import cases_option, config_options
from .validate import load_or_report

EXAMPLE = """\b
Example:
  evaltape list --suite coding --cases fix-
"""
"""The example ``--help`` ends with."""


@click.command(
    "list",
    short_help="List the selected cases: suite, id, kind, pinned model and markers.",
    epilog=EXAMPLE,
)
@cases_option
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@config_options("suites", "rubrics")
def list_cases(cases: tuple[str, ...], suite: str | None, config: Config) -> None:
    """List the selected cases: suite, id, kind, pinned model and markers.

    Markers: Q = quarantined (kept out of the gate), G = known gap (expected
    to fail today).  Suite files are validated first, as before any run.
    """
    suites = load_or_report((), config)
    try:
        chosen = select(suites, cases=cases, suite=suite)
    except SelectionError as exc:
        click.echo(f"evaltape: error: {exc}", err=True)
        raise SystemExit(2) from exc
    rows = [("SUITE", "ID", "KIND", "MODEL", "MARKS")]
    for s in chosen:
        for case in s.cases:
            marks = ("Q" if case.quarantined else "") + ("G" if case.known_gap else "")
            rows.append((s.name, case.id, case.kind.value, case.model or "-", marks or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[4]]))
    count = sum(len(s.cases) for s in chosen)
    click.echo(f"{count} case{'s' * (count != 1)} in {len(chosen)} suite{'s' * (len(chosen) != 1)}")
