"""``evaltape show``: list the sessions and events of tape files."""

from __future__ import annotations

import json

import click

from evaltape.recorder import CallDecoder, Note, TapeReader

from ..outputs.console._escape import printable
from ._boundary import boundary
from ._describe import describe_event, describe_session
from ._jsonview import event_json

EXAMPLE = """\b
Example:
  evaltape show cassettes/coding/fix-off-by-one.tape --json
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Show the sessions and events recorded in FILES.",
    epilog=EXAMPLE,
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event (git textconv).")
@boundary
def show(files: tuple[str, ...], as_json: bool) -> None:
    """Show the sessions and events recorded in FILES.

    Problems (a file cut short, a corrupt region, events from a newer
    version) are reported on stderr; a corrupt region exits 1 after the
    readable sessions are shown.  Control characters from the tape (terminal
    escape sequences) are printed as visible escapes such as ``\x1b``.
    """
    corrupt = False

    def note(n: Note) -> None:
        nonlocal corrupt
        corrupt = corrupt or n.kind == "corrupt"
        click.echo(printable(f"evaltape: {n.kind}: {n.message}"), err=True)

    for path in files:
        reader = TapeReader(path, strict=False, on_note=note)
        if not as_json and reader.header is not None:
            click.echo(
                printable(
                    f"{path}: written by {reader.header.writer}, format "
                    f"{reader.header.major}.{reader.header.minor}"
                )
            )
        for session in reader.sessions():
            if as_json:
                for event in session.events:
                    click.echo(json.dumps(event_json(event, session.session_id), sort_keys=True))
                continue
            click.echo(printable(describe_session(session)))
            decoder = CallDecoder()
            for event in session.events:
                click.echo("  " + printable(describe_event(event, decoder)))
    if corrupt:
        raise SystemExit(1)
