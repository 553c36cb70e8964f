"""Numbers on the command line and in the config are bounded: a huge, negative or
non-finite value is refused before anything runs, with exit 2 and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evaltape.scoring.cli.main import cli


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["live", "--trials", "99999999999999999999"], "1<=x<=10000"),
        (["live", "--concurrency", "20000"], "1<=x<=10000"),
        (["live", "--time-limit", "nan"], "'nan' is not a finite number"),
        (["live", "--time-limit", "inf"], "0<x<=2592000"),
        (["live", "--hang-limit", "1e300"], "0<x<=2592000"),
        (["live", "--retries", "1000"], "0<=x<=100"),
        (["rerecord", "--budget", "nan"], "'nan' is not a finite number"),
        (["live", "--gate", "--alpha", "nan"], "'nan' is not a finite number"),
        (["ab", "--candidate", "env:X=1", "--seed", str(2**70)], "0<=x<=9223372036854775807"),
        (["compare", "a", "b", "--alpha", "inf"], "0<x<1"),
        (["trace", "--width", str(10**12)], "20<=x<=100000"),
    ],
)
def test_an_out_of_range_number_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    (printed,) = done.output.strip().splitlines()
    assert printed.startswith("evaltape: error: Invalid value for ")
    assert said in printed
    assert printed.endswith(f"(see 'cli {args[0]} --help')")
    assert not (tmp_path / ".evaltape").exists()


def test_an_unknown_option_or_command_is_one_line() -> None:
    unknown = CliRunner().invoke(cli, ["live", "--trails", "3"])
    assert unknown.exit_code == 2
    (printed,) = unknown.output.strip().splitlines()
    assert printed.startswith("evaltape: error: No such option '--trails'.")
    assert "'--trials'" in printed and printed.endswith("(see 'cli live --help')")
    nothing = CliRunner().invoke(cli, ["nosuch"])
    assert nothing.exit_code == 2
    assert nothing.output.strip().splitlines() == [
        "evaltape: error: No such command 'nosuch'. (see 'cli --help')"
    ]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("trials = 100000", 'setting "trials": must be at most 10000, got 100000'),
        ("concurrency = 0", 'setting "concurrency": must be at least 1, got 0'),
        ("hang_limit = 1e12", 'setting "hang_limit": must be at most 2.592e+06 seconds'),
        ("hang_limit = nan", 'setting "hang_limit": must be a positive number of seconds'),
    ],
)
def test_an_out_of_range_number_in_the_config_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, said: str
) -> None:
    (tmp_path / "evaltape.toml").write_text(line + "\n", encoding="utf-8")
    (tmp_path / "evals").mkdir()
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["list"])
    assert done.exit_code == 2, done.output
    (printed,) = done.output.strip().splitlines()
    assert printed.startswith("evaltape: error: ")
    assert said in printed
