"""``evaltape script``: turn a script of responses into a replayable tape."""

from __future__ import annotations

import os

import click

from evaltape.recorder import ScriptError, ScriptFlavor, load_script, write_script_tape

EXIT_BAD_SCRIPT = 2


EXAMPLE = """\b
Example:
  evaltape script fix-bug.json -o fix-bug.tape --flavor anthropic.messages --stream
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Write the responses of SCRIPT (JSON, or YAML with PyYAML) as a tape.",
    epilog=EXAMPLE,
)
@click.argument("script_file", metavar="SCRIPT", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="Tape file to write (replaced unless --append).",
)
@click.option(
    "--flavor",
    type=click.Choice([f.value for f in ScriptFlavor]),
    default=None,
    help="API to imitate (default: the script's, else openai.chat).",
)
@click.option(
    "--stream/--no-stream",
    default=None,
    help="Serve the responses as server-sent events (default: the script's, else no).",
)
@click.option("--case", "case_id", default=None, help="Case id for the session header.")
@click.option("--append", is_flag=True, help="Add the session to an existing tape.")
def script(
    script_file: str,
    output: str,
    flavor: str | None,
    stream: bool | None,
    case_id: str | None,
    append: bool,
) -> None:
    """Write the responses of SCRIPT (JSON, or YAML with PyYAML) as a tape.

    The tape holds one session (mode script) whose exchanges are the
    responses a real API of the chosen flavour would send, so a harness
    replays against it with its real SDK.  A malformed script exits 2 with
    ``file: responses[3].tool_calls[0]: message``.
    """
    try:
        parsed = load_script(script_file)
        chosen = ScriptFlavor.resolve(flavor) if flavor else None
    except ScriptError as exc:
        click.echo(f"evaltape: error: {exc}", err=True)
        raise SystemExit(EXIT_BAD_SCRIPT) from exc
    if not append and os.path.lexists(output):
        try:
            os.remove(output)
        except OSError as exc:
            click.echo(f"evaltape: error: {output}: cannot replace: {exc.strerror}", err=True)
            raise SystemExit(1) from exc
    header = write_script_tape(parsed, output, flavor=chosen, stream=stream, case_id=case_id)
    meta = dict(header.metadata)
    how = "streamed" if meta["stream"] else "not streamed"
    click.echo(
        f"{output}: session {header.session_id}, {len(parsed.responses)} responses "
        f"({meta['flavor']}, {how})"
    )
