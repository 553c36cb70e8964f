"""`evaltape validate` and `evaltape list`: a real subprocess where the exit matters,
click's runner (same process, real files) for the rest."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evaltape.scoring.cli.main import cli

DATA = Path(__file__).parent / "data" / "cases"
GOOD = DATA / "good"
TWENTY = DATA / "bad" / "twenty.jsonl"

# One fragment per line of bad/twenty.jsonl: each line carries exactly one problem.
EXPECTED_TWENTY = {
    1: "invalid JSON at column 34: Expecting ',' delimiter",
    2: "expected a JSON object, got array",
    3: 'missing required field "whyModelBacked"',
    4: 'unknown field "expectTools" (did you mean "expectTool"?)',
    5: 'field "expectMaxTurns": expected a positive integer, got string',
    6: 'field "prompt": must not be empty',
    7: 'field "immutable": "check.py" is not one of "files"',
    8: 'field "verify" needs "files"',
    9: 'field "agentMode": "build" lets the agent write, but the case has no "files" sandbox',
    10: 'path "/etc/passwd" is absolute',
    11: 'path "src/../../outside.txt" escapes the sandbox',
    12: 'no rubric "no-such-rubric" (looked for rubrics/no-such-rubric.md)',
    13: 'duplicate id "typo-field" (first defined at twenty.jsonl:4)',
    14: "field \"expectBashMatches\": invalid regular expression 'grep ('",
    15: 'field "knownGap": missing "target"',
    16: 'unknown mode "biuld" (did you mean "build"?)',
    17: 'field "expectFirstToolIn": must list at least one tool',
    18: 'field "expectFirstToolIn" contradicts "expectTool": null',
    19: 'field "prompt" is given twice',
    20: 'field "expectMaxTurns": must be at least 1, got 0',
}


def _invoke(cwd: Path, *args: str) -> Result:
    """Run the command in this process with ``cwd`` as the current folder."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(old)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository root with the good suites under evals/ and no config file."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(GOOD, tmp_path / "evals")
    return tmp_path


@pytest.mark.slow
def test_twenty_malformed_cases_give_twenty_located_errors(project: Path) -> None:
    shutil.copy(TWENTY, project / "twenty.jsonl")
    done = _run(project, "validate", "twenty.jsonl", "--rubrics", "rubrics")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    located = [line for line in done.stderr.splitlines() if line.startswith("twenty.jsonl:")]
    assert len(located) == 20
    by_line = {}
    for line in located:
        match = re.match(r"twenty\.jsonl:(\d+): (.*)", line)
        assert match, line
        by_line[int(match[1])] = match[2]
    assert sorted(by_line) == list(range(1, 21))
    for number, fragment in EXPECTED_TWENTY.items():
        assert fragment in by_line[number], (number, by_line[number])
    assert done.stderr.splitlines()[-1] == "evaltape: 20 problems in 1 file; nothing was run"


@pytest.mark.slow
def test_valid_suites_print_a_summary(project: Path) -> None:
    done = _run(project, "validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3 suites, 5 cases OK (3 trajectory, 1 coding, 1 judged)\n"
    one = _run(project, "validate", "evals/judged.jsonl")
    assert one.stdout == "1 suite, 1 case OK (0 trajectory, 0 coding, 1 judged)\n"


def test_duplicate_ids_across_files_name_the_first(project: Path) -> None:
    first = (GOOD / "coding.jsonl").read_text().splitlines()[0]
    (project / "evals" / "zz-more.jsonl").write_text(first + "\n")
    done = _invoke(project, "validate")
    assert done.exit_code == 2
    assert done.stderr.splitlines()[0] == (
        'evals/zz-more.jsonl:1: duplicate id "fix-off-by-one" '
        "(first defined at evals/coding.jsonl:1)"
    )


def test_validate_reads_the_suites_folder_from_the_config(project: Path) -> None:
    (project / "evals").rename(project / "suites")
    (project / "evaltape.toml").write_text('suites = "suites"\n')
    sub = project / "deep" / "er"
    sub.mkdir(parents=True)
    done = _invoke(sub, "validate")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("3 suites, 5 cases OK")


def test_a_missing_suites_folder_is_one_clear_line(project: Path) -> None:
    done = _invoke(project, "validate", "--suites", "nowhere")
    assert done.exit_code == 2
    assert done.stderr.splitlines()[0] == "nowhere: no such file or folder"


def test_list_shows_the_selected_cases(project: Path) -> None:
    done = _invoke(project, "list", "--cases", "f")
    assert done.exit_code == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert rows[0] == ["SUITE", "ID", "KIND", "MODEL", "MARKS"]
    assert rows[1:] == [
        ["coding", "fix-off-by-one", "coding", "-", "-"],
        ["trajectory", "find-symbol-uses-grep", "trajectory", "openai/gpt-4o-mini", "-"],
        ["2", "cases", "in", "2", "suites"],
    ]


def test_list_marks_quarantine_and_known_gaps(project: Path) -> None:
    done = _invoke(project, "list", "--suite", "trajectory")
    marks = {row.split()[1]: row.split()[-1] for row in done.stdout.splitlines()[1:-1]}
    assert marks == {
        "find-symbol-uses-grep": "-",
        "answer-without-tools": "Q",
        "run-tests-with-pytest": "G",
    }


def test_list_refuses_an_unknown_suite(project: Path) -> None:
    done = _invoke(project, "list", "--suite", "judge")
    assert done.exit_code == 2
    assert done.stderr == (
        'evaltape: error: no suite named "judge" (did you mean "judged"?); '
        "the suites are coding, judged, trajectory\n"
    )


def test_list_refuses_invalid_suites_before_listing(project: Path) -> None:
    (project / "evals" / "broken.jsonl").write_text(json.dumps({"id": "x"}) + "\n")
    done = _invoke(project, "list")
    assert done.exit_code == 2
    assert done.stdout == ""
    assert 'evals/broken.jsonl:1: missing required field "prompt"' in done.stderr
