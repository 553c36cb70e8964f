"""The command table: each line names its command truly, and ``--help`` imports none.

``evaltape --help`` lists the commands from the table in
``scoring/cli/main.py`` without importing them (their dependencies are most
of the CLI's start-up time); running a command imports only that one.
"""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from evaltape.scoring.cli.main import COMMANDS, cli, load


@pytest.mark.parametrize(("name", "where", "text"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_each_line_of_the_table_names_its_command(name: str, where: str, text: str) -> None:
    command = load(where)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.get_short_help_str(limit=500) == text


def test_names_are_unique() -> None:
    assert len({name for name, _, _ in COMMANDS}) == len(COMMANDS)


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from evaltape.scoring.cli.main import cli\n"
        f"try:\n    cli({args!r})\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage:" in done.stdout
    return set(done.stderr.split())


def test_help_lists_every_command_and_imports_none() -> None:
    loaded = _modules_after(["--help"])
    heavy = {"evaltape.recorder", "evaltape.replay", "evaltape.scoring._public", "httpx", "scipy"}
    assert not heavy & loaded
    assert not {f"evaltape.scoring.cli.{w.split(':')[0]}" for _, w, _ in COMMANDS} & loaded


@pytest.mark.slow
def test_a_command_help_imports_that_command_only() -> None:
    loaded = _modules_after(["show", "--help"])
    assert "evaltape.scoring.cli.show" in loaded
    assert "evaltape.scoring.cli.live" not in loaded


def test_the_listing_shows_each_command_with_its_help() -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(cli, ["--help"], terminal_width=200).output
    for name, _, text in COMMANDS:
        line = next(line for line in out.splitlines() if line.strip().startswith(name + " "))
        assert line.split(None, 1)[1].rstrip(".").rstrip() in text
