"""``evaltape add TAPE``: a draft case from a recorded session."""

from __future__ import annotations

from pathlib import Path

import click

from evaltape.recorder import TapeError

from .._config import Config, display_path
from .._errors import ScoringError
from ..drafts._append import append_case
from ..drafts._harvest import harvest
from ..outputs.console._exit import EXIT_REFUSED, fail
from ._boundary import boundary
from ._options import config_options

EXAMPLE = """\b
Example:
  evaltape add cassettes/coding/fix-off-by-one.tape --write coding
"""
"""The example ``--help`` ends with."""


@click.command(
    "add",
    short_help="Print a draft case made from a recorded session of TAPE.",
    epilog=EXAMPLE,
)
@click.argument("tape", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--session",
    metavar="N",
    help="The session: its 1-based position in the tape, or its id or a prefix (default: last).",
)
@click.option(
    "--turn",
    type=click.IntRange(min=1),
    metavar="K",
    help="Draft the K-th user message of the session instead of the first.",
)
@click.option("--id", "case_id", metavar="ID", help="The draft's id (default: made from the tape).")
@click.option(
    "--write",
    "suite",
    metavar="SUITE",
    help="Also append the draft to <suites>/SUITE.jsonl (a coding suite is refused).",
)
@config_options("suites")
@boundary
def add(
    tape: Path,
    session: str | None,
    turn: int | None,
    case_id: str | None,
    suite: str | None,
    config: Config,
) -> None:
    """Print a draft case made from a recorded session of TAPE.

    The draft (one JSON line in the suite format) goes to stdout and the notes
    to stderr, so `evaltape add T.tape >> evals/trajectory.jsonl` keeps the
    notes on the terminal.  prompt is the session's first user message (or
    the --turn K-th); model, expectTool, expectInArgs and expectMaxTurns come
    from its trace; failureCategory and whyModelBacked are "TODO:"
    placeholders.  Exit 0; 2 on bad input (no such session or turn, a coding
    suite, a duplicate id, a damaged tape).
    """
    try:
        draft = harvest(tape, session=session, turn=turn, case_id=case_id)
        written = append_case(config.suites, suite, draft) if suite is not None else None
    except (TapeError, ScoringError) as exc:
        fail(str(exc), EXIT_REFUSED)
    click.echo(draft.line())
    for note in draft.notes:
        click.echo(f"note: {note}", err=True)
    if written is not None:
        path, line = written
        click.echo(f"appended to {display_path(path)}:{line}", err=True)
