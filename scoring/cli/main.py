# ruff: noqa: E501  (the table keeps one command to a line)
"""The ``evaltape`` command: one click group; each command lives in its own module.

Commands are listed in one explicit table (``COMMANDS``: name, where the command
is, its one-line help) and imported only when run, so ``evaltape --help`` loads
no command's dependencies.  Adding a command is one line of the table
(tests/test_cli_table.py checks each line against the command it names).

Every expected error (``TapeError`` and friends) becomes one line on stderr and
a non-zero exit; a traceback means a bug.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("show", "show:show", "Show the sessions and events recorded in FILES."),
    ("lint", "lint:lint", "Check that the tapes in PATHS hold no secrets."),
    ("script", "script:script", "Write the responses of SCRIPT (JSON, or YAML with PyYAML) as a tape."),
    ("validate", "validate:validate", "Check suite files (PATHS: files or folders; default the suites folder)."),
    ("list", "list_cases:list_cases", "List the selected cases: suite, id, kind, pinned model and markers."),
    ("history", "history:history", "List finished runs from <results>/history.jsonl, newest last."),
    ("status", "status:status", "Show the state and progress of RUN (default: latest)."),
    ("recover", "recover:recover", "Close the record of a crashed run RUN and recover its sessions in flight."),
    ("live", "live:live", "Run the selected cases live, each attempt recorded to the run's own tapes."),
    ("replay", "replay_cmd:replay", "Replay recorded live sessions with today's harness and compare verdicts."),
    ("rerecord", "rerecord:rerecord", "Record again, live, exactly the attempts a replay found STALE."),
    ("coverage", "coverage:coverage", "Say what the recorded attempts can catch, per tool and per case."),
    ("rescore", "rescore:rescore", "Score recorded sessions again with today's cases and scorer; nothing runs."),
    ("trace", "trace:trace", "Show a run's attempts at the selected cases turn by turn, read from their tapes."),
    ("add", "add:add", "Print a draft case made from a recorded session of TAPE."),
    ("compare", "compare_cmd:compare_cmd", "Print the regression report of CURRENT (default: latest) against BASE."),
    ("quarantine-report", "quarantine:quarantine_report_cmd", "Propose quarantines and releases from the pass rates the history shows."),
    ("ab", "ab:ab", "A/B two variants of the harness now, interleaved; a report, never a gate."),
    ("export", "export:export", "Export the attempts of a finished run RUN (default: latest) as OTLP traces."),
    ("report", "report_cmd:report", "Write one self-contained HTML page (no CDN, no server) for a run."),
    ("bisect", "bisect:bisect", "Find the harness commit that broke a replayed case (git bisect, replay as oracle)."),
)  # fmt: skip
"""Every subcommand: (name, "module:attribute" in ``evaltape.scoring.cli``, one-line help)."""


def load(where: str) -> click.Command:
    """The command object at ``"module:attribute"`` of ``evaltape.scoring.cli``."""
    module, _, attr = where.partition(":")
    command: click.Command = getattr(
        importlib.import_module(f"evaltape.scoring.cli.{module}"), attr
    )
    return command


class _Table(click.Group):
    """A group whose commands are imported when run; help is read from ``COMMANDS``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, _, _ in COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for name, where, _ in COMMANDS:
            if name == cmd_name:
                return load(where)
        return None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command; a usage error (an unknown option, a value out of range) is
        one line, ``evaltape: error: ...``, and exit 2, like every other bad input."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare `evaltape`: the help, as click
                exc.show()
                sys.exit(exc.exit_code)
            where = exc.ctx.command_path if exc.ctx is not None else "evaltape"
            click.echo(f"evaltape: error: {exc.format_message()} (see '{where} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("evaltape: aborted", err=True)
            sys.exit(1)
        # As click's own standalone mode: --help and --version end with their code, a
        # command that returned ends with 0.
        sys.exit(code if isinstance(code, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # each line whole, wrapped, never cut short with "..."
        rows = [(name, text) for name, _, text in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_Table, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evaltape", prog_name="evaltape")
def cli(**_: Any) -> None:
    """Record agent sessions as tapes; replay, rescore and gate them."""
