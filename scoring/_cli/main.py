"""The ``evaltape`` command: one click group; each command lives in its own module.

Every expected error (``TapeError`` and friends) becomes one line on stderr and
a non-zero exit; a traceback means a bug.
"""

from __future__ import annotations

import click

from evaltape.recorder import VERSION
from evaltape.scoring._cli import (
    ab,
    add,
    bisect,
    compare_cmd,
    export,
    history,
    lint,
    list_cases,
    live,
    quarantine,
    replay_cmd,
    report_cmd,
    rerecord,
    rescore,
    script,
    show,
    status,
    trace,
    validate,
)

COMMANDS: tuple[click.Command, ...] = (
    show.show,
    lint.lint,
    script.script,
    validate.validate,
    list_cases.list_cases,
    history.history,
    status.status,
    live.live,
    replay_cmd.replay,
    rerecord.rerecord,
    rescore.rescore,
    trace.trace,
    add.add,
    compare_cmd.compare_cmd,
    quarantine.quarantine_report_cmd,
    ab.ab,
    export.export,
    report_cmd.report,
    bisect.bisect,
)
"""Every subcommand, resolved through this one explicit table."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="evaltape")
def cli() -> None:
    """Record agent sessions as tapes; replay, rescore and gate them."""


for _command in COMMANDS:
    cli.add_command(_command)
