"""A tape cannot forge a pass: snapshot aliases are refused, and ``verifyExpect`` catches a
check that was made to exit 0 early."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evaltape.recorder import (
    FileEntry,
    SessionEnded,
    SessionStarted,
    Status,
    TapeError,
    TapeReader,
    WorkspaceSnapshot,
    fold,
    open_session,
)
from evaltape.scoring import Case, load_suites, score_session
from evaltape.scoring.cli.main import cli

HEADER = SessionStarted(session_id="ab" * 8, started_at=1_700_000_000.0, case_id="c", model="m")
BASE: dict[str, Any] = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
BROKEN = b"def add(a, b):\n    return a - b\n"
FIXED = b"def add(a, b):\n    return a + b\n"
CHECK = "from calc import add\nassert add(2, 3) == 5\nprint('CHECK OK')\n"
"""The case's checker: it prints its own sentinel last, after every assertion."""
LENIENT = "print('CHECK OK')\n"
"""What a forged ``check.py`` would say: nothing checked."""
EXITS_ON_IMPORT = b"import os\nos._exit(0)\n"
"""A ``calc.py`` that ends the process with status 0 as soon as the checker imports it."""


def _case(tmp_path: Path, **fields: Any) -> Case:
    path = tmp_path / "suite.jsonl"
    case = {
        **BASE,
        "files": {"calc.py": BROKEN.decode(), "check.py": CHECK},
        "verify": ["python", "check.py"],
        "immutable": ["check.py"],
        **fields,
    }
    path.write_text(json.dumps(case) + "\n", encoding="utf-8")
    (suite,) = load_suites([path], rubrics_dir=tmp_path / "rubrics")
    return suite.cases[0]


def _snapshot(files: list[tuple[str, bytes]]) -> WorkspaceSnapshot:
    return WorkspaceSnapshot(at=1.0, files=tuple(FileEntry(path=p, data=d) for p, d in files))


def _events(files: list[tuple[str, bytes]]) -> list[Any]:
    return [HEADER, _snapshot(files), SessionEnded(at=2.0, status=Status.COMPLETED)]


@pytest.mark.parametrize("alias", ["./check.py", "check.py/", "sub/../check.py", "a//check.py"])
def test_a_snapshot_alias_of_the_checker_never_rescores_as_a_pass(
    tmp_path: Path, alias: str
) -> None:
    # The real check.py is unchanged (the immutable guard compares it); the alias,
    # restored after it, would replace it with a checker that checks nothing.
    files = [("calc.py", BROKEN), ("check.py", CHECK.encode()), (alias, LENIENT.encode())]
    score = score_session(_case(tmp_path), fold(_events(files)))
    assert not score.passed
    if ".." in alias:
        assert score.reason == f"the workspace snapshot has a path outside the sandbox: {alias!r}"
    else:
        assert score.reason == (
            f"the workspace snapshot names a file twice or by an alias: {alias!r}"
        )


@pytest.mark.parametrize("alias", ["./check.py", "check.py/", "/check.py", "a/./b", "a/../b"])
def test_a_tape_holding_a_snapshot_alias_is_refused_on_read(tmp_path: Path, alias: str) -> None:
    tape = tmp_path / "forged.tape"
    with open_session(tape, HEADER) as writer:
        writer.append(_snapshot([("check.py", CHECK.encode()), (alias, LENIENT.encode())]))
    with pytest.raises(TapeError, match="is not a plain relative path"):
        list(TapeReader(tape).sessions())
    shown = CliRunner().invoke(cli, ["show", str(tape)])
    assert shown.exit_code != 0
    lines = shown.output.strip().splitlines()
    assert any(alias in line and "not a plain relative path" in line for line in lines)
    assert "Traceback" not in shown.output


def test_a_tape_naming_one_file_twice_is_refused_on_read(tmp_path: Path) -> None:
    tape = tmp_path / "twice.tape"
    with open_session(tape, HEADER) as writer:
        writer.append(_snapshot([("check.py", CHECK.encode()), ("check.py", b"")]))
    with pytest.raises(TapeError, match=r"'check\.py' is there twice"):
        list(TapeReader(tape).sessions())


def test_an_exit_code_alone_is_forged_by_a_module_that_exits_on_import(tmp_path: Path) -> None:
    # The forgery verifyExpect exists for: without it, exit status 0 is all verify asks.
    files = [("calc.py", EXITS_ON_IMPORT), ("check.py", CHECK.encode())]
    score = score_session(_case(tmp_path), fold(_events(files)))
    assert score.passed


def test_verify_expect_catches_the_forged_exit(tmp_path: Path) -> None:
    files = [("calc.py", EXITS_ON_IMPORT), ("check.py", CHECK.encode())]
    score = score_session(_case(tmp_path, verifyExpect="CHECK OK"), fold(_events(files)))
    assert not score.passed
    assert score.reason == (
        "verify exited 0 but did not print 'CHECK OK' last (it printed nothing): python check.py"
    )


def test_verify_expect_passes_a_real_fix_and_fails_a_real_bug(tmp_path: Path) -> None:
    case = _case(tmp_path, verifyExpect="CHECK OK")
    fixed = score_session(case, fold(_events([("calc.py", FIXED), ("check.py", CHECK.encode())])))
    assert fixed.passed
    assert any(c.name == "verify" and c.passed for c in fixed.checks)
    broken = score_session(case, fold(_events([("calc.py", BROKEN), ("check.py", CHECK.encode())])))
    assert not broken.passed
    assert broken.reason.startswith("verify exited 1: ")


def test_verify_expect_names_the_last_line_it_got(tmp_path: Path) -> None:
    case = _case(tmp_path, verify="echo first; echo 'not the sentinel'", verifyExpect="CHECK OK")
    score = score_session(case, fold(_events([("calc.py", FIXED), ("check.py", CHECK.encode())])))
    assert score.reason == (
        "verify exited 0 but did not print 'CHECK OK' last (its last line was "
        "'not the sentinel'): echo first; echo 'not the sentinel'"
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"verifyExpect": "ok", "verify": None}, 'field "verifyExpect" needs "verify"'),
        ({"verifyExpect": "two\nlines"}, 'field "verifyExpect": must be one non-empty line'),
        ({"verifyExpect": "  "}, 'field "verifyExpect": must be one non-empty line'),
        ({"verifyExpect": 3}, 'field "verifyExpect": expected a string, got integer'),
    ],
)
def test_a_bad_verify_expect_is_one_line_naming_the_field(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    case = {
        **BASE,
        "files": {"check.py": CHECK},
        "verify": ["python", "check.py"],
        **fields,
    }
    case = {k: v for k, v in case.items() if v is not None}
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps(case) + "\n", encoding="utf-8")
    done = CliRunner().invoke(cli, ["validate", str(suite)])
    assert done.exit_code == 2
    assert message in done.output
    assert "Traceback" not in done.output
