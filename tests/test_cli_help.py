"""``--help`` helps: full first lines, an example per command, one spelling per concept,
usage lines that show optional arguments as optional, and docs/cli.md generated from the
same text (regenerate with ``python -m evaltape.scoring.cli._reference > docs/cli.md``)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from evaltape.scoring._settings import SETTINGS
from evaltape.scoring.cli._reference import cli_reference, example_of
from evaltape.scoring.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
CTX = click.Context(cli, info_name="evaltape")
NAMES = cli.list_commands(CTX)
HANG = next(s.help for s in SETTINGS if s.name == "hang_limit")


def command(name: str) -> click.Command:
    found = cli.get_command(CTX, name)
    assert found is not None
    return found


def evaltape(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_docs_cli_md_is_the_commands_own_help() -> None:
    assert (ROOT / "docs" / "cli.md").read_text() == cli_reference(cli), (
        "docs/cli.md is out of date: python -m evaltape.scoring.cli._reference > docs/cli.md"
    )


def test_the_command_list_shows_every_first_line_in_full() -> None:
    listing = evaltape("--help").stdout
    commands = listing.split("Commands:\n", 1)[1]
    assert "..." not in commands
    for name in NAMES:
        first = " ".join(command(name).help.split("\n\n")[0].split())  # type: ignore[union-attr]
        assert command(name).short_help == first, name
        shown = re.search(rf"^  {re.escape(name)} +(.+(?:\n {{10,}}.+)*)", commands, re.MULTILINE)
        assert shown is not None and " ".join(shown.group(1).split()) == first


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_command_shows_one_example_that_parses(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = example_of(command(name))
    words = shlex.split(example)
    assert words[:2] == ["evaltape", name], example
    monkeypatch.chdir(ROOT)
    command(name).make_context(name, words[2:])
    shown = evaltape(name, "--help").stdout
    assert shown.rstrip().endswith(f"Example:\n    {example}")


@pytest.mark.parametrize("name", NAMES)
def test_optional_arguments_are_optional_in_the_usage_line(name: str) -> None:
    cmd = command(name)
    ctx = click.Context(cmd, info_name=name, parent=CTX)
    for param in cmd.params:
        if isinstance(param, click.Argument):
            piece = param.make_metavar(ctx)
            assert piece.startswith("[") == (not param.required), f"{name}: {piece}"


def test_case_selection_is_spelled_cases_everywhere() -> None:
    for name in NAMES:
        for param in command(name).params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            if "--case" in param.opts and name != "script":  # script: the case id it writes
                pytest.fail(f"evaltape {name} has --case; every command selects with --cases")
            if param.name == "cases":
                assert param.opts == ["--cases"], name


@pytest.mark.slow
def test_trace_case_still_works_and_says_it_is_deprecated(tmp_path: Path) -> None:
    done = evaltape("trace", "latest", "--case", "where", "--results", str(tmp_path), cwd=tmp_path)
    assert "warning: --case is deprecated; use --cases where" in done.stderr
    assert "--case " not in evaltape("trace", "--help").stdout


def test_hang_limit_is_described_the_same_in_help_and_docs() -> None:
    for name in NAMES:
        for param in command(name).params:
            if isinstance(param, click.Option) and "--hang-limit" in param.opts:
                assert param.help is not None and param.help.startswith(HANG), name
    rows = [
        line
        for doc in sorted((ROOT / "docs").glob("*.md"))
        for line in doc.read_text().splitlines()
        if re.match(r"\| (`hang_limit` \| )?`--hang-limit SECONDS` \|", line)
    ]
    assert len(rows) >= 3
    assert all(HANG in row for row in rows), rows
