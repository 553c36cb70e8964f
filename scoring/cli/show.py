"""``evaltape show``: list the sessions and events of tape files."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import click

from evaltape.recorder import Event, TapeReader
from evaltape.recorder._shared import MAX_TAPE_BYTES, CallDecoder, to_plain
from evaltape.recorder.tape import Note

from ..outputs.console._terminal import printable
from ._boundary import boundary
from ._describe import describe_event, describe_session

EXAMPLE = """\b
Example:
  evaltape show cassettes/coding/fix-off-by-one.tape --json
"""
"""The example ``--help`` ends with."""

CUT = 2048
"""Without ``--full``, a body, string or event line longer than this many bytes (or
characters) shows only its start, then how much more there was."""
MAX_ITEMS = 1000
"""Without ``--full``, a list (a streamed response's chunks) shows at most this many items."""


@click.command(
    short_help="Show the sessions and events recorded in FILES.",
    epilog=EXAMPLE,
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event (git textconv).")
@click.option(
    "--full",
    is_flag=True,
    help=f"Print every body and field whole (by default each is cut after {CUT} bytes).",
)
@boundary
def show(files: tuple[str, ...], as_json: bool, full: bool) -> None:
    """Show the sessions and events recorded in FILES.

    Problems (a file cut short, a corrupt region, events from a newer
    version) are reported on stderr; a corrupt region exits 1 after the
    readable sessions are shown.  Control characters from the tape (terminal
    escape sequences) are printed as visible escapes such as ``\x1b``.
    Bodies longer than 2048 bytes (strings and lines: characters) are cut,
    ending with ``… N more bytes (sha256 …)``, unless --full.  A tape that decodes past
    1 GiB is refused with exit 2.
    """
    cut = None if full else CUT
    corrupt = False

    def note(n: Note) -> None:
        nonlocal corrupt
        corrupt = corrupt or n.kind == "corrupt"
        click.echo(printable(f"evaltape: {n.kind}: {n.message}"), err=True)

    for path in files:
        reader = TapeReader(path, strict=False, on_note=note, tape_limit=MAX_TAPE_BYTES)
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
                    shown = event_json(event, session.session_id, cut=cut)
                    click.echo(json.dumps(shown, sort_keys=True))
                continue
            click.echo(printable(describe_session(session)))
            decoder = CallDecoder()
            for event in session.events:
                click.echo("  " + printable(_cut_text(describe_event(event, decoder), cut)))
    if corrupt:
        raise SystemExit(1)


def _more(data: bytes, left: int, unit: str = "bytes") -> str:
    """The marker after a cut value: how much is left out, and a digest of the whole value
    (so ``git diff`` through ``show --json`` still tells two long bodies apart)."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    return f"… {left} more {unit} (sha256 {digest})"


def _cut_text(text: str, cut: int | None) -> str:
    if cut is None or len(text) <= cut:
        return text
    whole = text.encode("utf-8", "replace")
    return text[:cut] + _more(whole, len(text) - cut, "characters")


def _jsonable(value: Any, cut: int | None = None) -> Any:
    if isinstance(value, bytes):
        if cut is not None and len(value) > cut:
            return value[:cut].decode("utf-8", "replace") + _more(value, len(value) - cut)
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, str):
        return _cut_text(value, cut)
    if isinstance(value, dict):
        return {k: _jsonable(v, cut) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if cut is not None and len(value) > MAX_ITEMS:
            shown = [_jsonable(v, cut) for v in value[:MAX_ITEMS]]
            return [*shown, f"… {len(value) - MAX_ITEMS} more items"]
        return [_jsonable(v, cut) for v in value]
    return value


def event_json(event: Event, session_id: str, *, cut: int | None = None) -> dict[str, Any]:
    """The JSON view of one event, tagged with its session id; with ``cut``, every body
    or string longer than ``cut`` bytes shows its start and how much more there was."""
    plain = to_plain(event)
    return {"session": session_id, **_jsonable(plain, cut)}
