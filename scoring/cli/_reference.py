"""docs/cli.md, made from the commands' own help: one text for ``--help`` and the docs.

``python -m evaltape.scoring.cli._reference > docs/cli.md`` writes it; a
test fails when the file and the commands disagree.
"""

from __future__ import annotations

import click

from ._options import CommonFirst

EXAMPLE_HEADING = "Example:"
"""The line of a command's epilog that its example follows."""

INTRO = """\
# Command reference

Every `evaltape` command with its usage line, what it does, its options and one example. This page
is generated from the commands' own `--help` (`python -m evaltape.scoring.cli._reference >
docs/cli.md`), so it says what `evaltape COMMAND --help` says; `tests/test_cli_help.py` fails when
the two differ. Settings flags (`--suites`, `--hang-limit`, ...) are described once, in the
settings table ([configuration.md](configuration.md)), and read from there by every command.
"""


def example_of(command: click.Command) -> str:
    """The example command of ``command``'s epilog ("" when it has none)."""
    lines = (command.epilog or "").splitlines()
    if EXAMPLE_HEADING not in (line.strip() for line in lines):
        return ""
    after = lines[[line.strip() for line in lines].index(EXAMPLE_HEADING) + 1 :]
    return "\n".join(line.strip() for line in after if line.strip())


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def command_section(group: click.Group, name: str) -> str:
    """The Markdown section of one command."""
    root = click.Context(group, info_name="evaltape")
    command = group.get_command(root, name)
    assert command is not None, name
    ctx = click.Context(command, info_name=name, parent=root)
    usage = " ".join(["Usage: evaltape", name, *command.collect_usage_pieces(ctx)])
    body = (command.help or "").strip().split("\n\n")
    paragraphs = [" ".join(p.split()) for p in body]
    sections = (
        command.sections(ctx)
        if isinstance(command, CommonFirst)
        else (("", command.get_params(ctx)),)
    )
    parts = [f"## `evaltape {name}`", "", "```", usage, "```", ""]
    for p in paragraphs:
        parts += [p, ""]
    for title, params in sections:
        rows = []
        for param in params:
            record = param.get_help_record(ctx)
            if isinstance(param, click.Option) and "--help" not in param.opts and record:
                rows.append(f"| `{_cell(record[0])}` | {_cell(record[1])} |")
        if title:
            parts += [f"{title}:", ""]
        parts += ["| option | meaning |", "|---|---|", *rows, ""]
    example = example_of(command)
    if example:
        parts += ["Example:", "", "```sh", example, "```", ""]
    return "\n".join(parts)


def cli_reference(group: click.Group) -> str:
    """The whole page: the introduction, then every command in name order."""
    names = group.list_commands(click.Context(group, info_name="evaltape"))
    return INTRO + "\n" + "\n".join(command_section(group, n) for n in names)


if __name__ == "__main__":
    from .main import cli

    click.echo(cli_reference(cli), nl=False)
