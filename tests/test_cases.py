"""Suite files load into immutable Case values, or are refused with every problem."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import attrs
import pytest

from evaltape.scoring import (
    Case,
    CaseError,
    CaseKind,
    ScoringError,
    SelectionError,
    Suite,
    load_suites,
    select,
)
from evaltape.scoring.cases._cases import AgentMode, KnownGap, Problem, split_cases
from evaltape.scoring.cases._fields import AGENT_MODES, MUTATING_MODES
from evaltape.scoring.cases._frozen import FrozenMap

DATA = Path(__file__).parent / "data" / "cases"
GOOD = DATA / "good"
RUBRICS = GOOD / "rubrics"

BASE = {"id": "c1", "prompt": "p", "failureCategory": "cat", "whyModelBacked": "why"}


def _write(path: Path, *cases: Mapping[str, object] | str) -> Path:
    lines = [c if isinstance(c, str) else json.dumps(c) for c in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _by_id(suites: tuple[Suite, ...]) -> dict[str, Case]:
    return {case.id: case for suite in suites for case in suite.cases}


def _problems(tmp_path: Path, *cases: dict[str, object] | str) -> list[str]:
    path = _write(tmp_path / "suite.jsonl", *cases)
    with pytest.raises(CaseError) as info:
        load_suites([path], rubrics_dir=tmp_path / "rubrics")
    return [p.message for p in info.value.problems]


def test_good_suites_load_in_file_order_with_their_kinds() -> None:
    suites = load_suites([GOOD], rubrics_dir=RUBRICS)
    assert [s.name for s in suites] == ["coding", "judged", "trajectory"]
    assert [s.path for s in suites] == [
        str(GOOD / f"{n}.jsonl") for n in ("coding", "judged", "trajectory")
    ]
    trajectory = suites[2]
    assert [c.id for c in trajectory.cases] == [
        "find-symbol-uses-grep",
        "answer-without-tools",
        "run-tests-with-pytest",
    ]
    assert [c.line for c in trajectory.cases] == [1, 3, 4]  # line 2 is blank
    assert {c.id: c.kind for c in _by_id(suites).values()} == {
        "find-symbol-uses-grep": CaseKind.TRAJECTORY,
        "answer-without-tools": CaseKind.TRAJECTORY,
        "run-tests-with-pytest": CaseKind.TRAJECTORY,
        "fix-off-by-one": CaseKind.CODING,
        "explain-a-module": CaseKind.JUDGED,
    }
    assert trajectory.count(CaseKind.TRAJECTORY) == 3


def test_a_trajectory_case_keeps_every_expectation_as_immutable_values() -> None:
    case = _by_id(load_suites([GOOD / "trajectory.jsonl"], rubrics_dir=RUBRICS))[
        "find-symbol-uses-grep"
    ]
    assert case.suite == "trajectory"
    assert case.where == f"{GOOD / 'trajectory.jsonl'}:1"
    assert case.failure_category == "tool-routing"
    assert case.expect_first_tool_in == ("grep", "glob")
    assert case.expect_tool == "grep"
    assert case.expect_no_tool is False
    assert case.expect_max_turns == 4
    assert case.forbid_tools == ("write", "edit")
    assert case.model == "openai/gpt-4o-mini"
    assert case.agent_mode is AgentMode.READ_ONLY
    assert case.agent_mode.mutating is False
    args = case.expect_in_args
    assert args is not None
    assert list(args) == ["pattern", "options", "paths", "limit"]
    assert args["pattern"] == "HANG_LIMIT"
    assert args["options"] == FrozenMap((("ignoreCase", False),))
    assert args["paths"] == ("src",)
    assert args["limit"] == 20
    assert args == {
        "limit": 20,
        "paths": ("src",),
        "pattern": "HANG_LIMIT",
        "options": {"ignoreCase": False},
    }
    assert hash(case) == hash(attrs.evolve(case))  # hashable all the way down
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        case.id = "other"  # type: ignore[misc]


def test_null_expect_tool_differs_from_an_absent_one() -> None:
    cases = _by_id(load_suites([GOOD / "trajectory.jsonl"], rubrics_dir=RUBRICS))
    assert cases["answer-without-tools"].expect_tool is None
    assert cases["answer-without-tools"].expect_no_tool is True
    assert cases["answer-without-tools"].quarantined is True
    assert cases["run-tests-with-pytest"].expect_tool is None
    assert cases["run-tests-with-pytest"].expect_no_tool is False


def test_bash_patterns_and_known_gap() -> None:
    case = _by_id(load_suites([GOOD / "trajectory.jsonl"], rubrics_dir=RUBRICS))[
        "run-tests-with-pytest"
    ]
    assert case.expect_bash_matches == ("^pytest\\b", "-q")
    assert case.known_gap == KnownGap(
        notes="the agent runs python -m unittest today", target="the agent runs pytest -q"
    )


def test_a_coding_case_has_its_sandbox_and_verify_command() -> None:
    (suite,) = load_suites([GOOD / "coding.jsonl"], rubrics_dir=RUBRICS)
    (case,) = suite.cases
    assert case.kind is CaseKind.CODING
    assert case.files is not None
    assert dict(case.files) == {
        "calc.py": "def add(a, b):\n    return a - b\n",
        "check.py": "from calc import add\nassert add(2, 3) == 5\n",
    }
    assert case.verify == ("python", "check.py")
    assert case.verify_timeout == 30.0
    assert case.immutable == ("check.py",)
    assert case.agent_mode is AgentMode.EDIT
    assert case.agent_mode.mutating is True


def test_a_judged_case_names_its_rubric_file() -> None:
    (suite,) = load_suites([GOOD / "judged.jsonl"], rubrics_dir=RUBRICS)
    (case,) = suite.cases
    assert case.kind is CaseKind.JUDGED
    assert case.rubric == "answer-quality"
    assert case.rubric_path == str(RUBRICS / "answer-quality.md")
    assert case.forbid_tools == ("write", "edit")


def test_a_verify_string_stays_a_shell_command(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", {**BASE, "files": {}, "verify": "python -c 'pass'"})
    (suite,) = load_suites([path], rubrics_dir=tmp_path)
    assert suite.cases[0].verify == "python -c 'pass'"
    assert suite.cases[0].files == FrozenMap(())  # an empty sandbox is still a sandbox
    assert suite.cases[0].kind is CaseKind.CODING


def test_fingerprint_follows_the_definition_not_the_key_order(tmp_path: Path) -> None:
    one = {**BASE, "expectTool": "grep"}
    reordered = dict(reversed(list(one.items())))
    changed = {**one, "prompt": "other"}
    prints = []
    for i, case in enumerate((one, reordered, changed)):
        (suite,) = load_suites([_write(tmp_path / f"s{i}.jsonl", case)], rubrics_dir=tmp_path)
        prints.append(suite.cases[0].fingerprint)
    assert prints[0] == prints[1] != prints[2]


def test_agent_modes_match_the_checked_names() -> None:
    assert tuple(m.value for m in AgentMode) == AGENT_MODES
    assert {m.value for m in AgentMode if m.mutating} == set(MUTATING_MODES)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("// a comment", "comments are not allowed in JSON Lines (say why in whyModelBacked)"),
        ('{"id": NaN}', "invalid JSON: NaN is not a JSON number"),
        (
            {**BASE, "expectTool": "grep", "expectMaxTurns": True},
            'field "expectMaxTurns": expected a positive integer, got boolean',
        ),
        ({**BASE, "expectTool": "grep", "colour": 1}, 'unknown field "colour"'),
        (BASE, "case checks nothing: give a trajectory expectation, verify/immutable, or a rubric"),
        (
            {**BASE, "files": {"a": ""}, "expectTool": "x", "verifyTimeout": 5},
            'field "verifyTimeout" needs "verify"',
        ),
        (
            {**BASE, "files": {"a": ""}, "verify": "true", "verifyTimeout": -1},
            'field "verifyTimeout": must be a positive number of seconds, got -1',
        ),
        ({**BASE, "immutable": ["a"]}, 'field "immutable" needs "files" (a sandbox to run in)'),
        (
            {**BASE, "expectTool": "write", "forbidTools": ["write"]},
            'field "forbidTools": "write" is both expected and forbidden',
        ),
        (
            {
                **BASE,
                "expectTool": "x",
                "quarantined": True,
                "knownGap": {"notes": "n", "target": "t"},
            },
            'a case is either a "knownGap" or "quarantined", not both',
        ),
        (
            {**BASE, "expectTool": "x", "knownGap": {"notes": "", "target": "t"}},
            'field "knownGap.notes": must not be empty',
        ),
        (
            {**BASE, "expectTool": "x", "knownGap": {"notes": "n", "target": "t", "note": "x"}},
            'field "knownGap": unknown key "note" (did you mean "notes"?)',
        ),
        (
            {**BASE, "files": {"a.py": 3}, "verify": "true"},
            'field "files.a.py": expected a string (the file\'s content), got integer',
        ),
        (
            {**BASE, "files": {"a": "", "a/b": ""}, "verify": "true"},
            'field "files": "a" is a file and a folder of "a/b"',
        ),
        (
            {**BASE, "files": {"C:/x": ""}, "verify": "true"},
            'field "files": path "C:/x" is absolute (give it relative to the sandbox)',
        ),
        (
            {**BASE, "files": {"a\\..\\..\\x": ""}, "verify": "true"},
            'field "files": path "a\\..\\..\\x" escapes the sandbox (contains ..)',
        ),
        (
            {**BASE, "files": {"a": "", "./a": ""}, "verify": "true"},
            'field "files": path "./a" is the same file as "a"',
        ),
        (
            {**BASE, "expectInArgs": {"q": "x"}},
            'field "expectInArgs" needs "expectTool" (the tool whose arguments it checks)',
        ),
        (
            {**BASE, "expectTool": "grep", "expectInArgs": {"q": [1, None]}},
            'field "expectInArgs.q[1]": expected a string, number, boolean, array or object, '
            "got null",
        ),
        (
            {**BASE, "expectTool": "grep", "expectInArgs": {}},
            'field "expectInArgs": must name at least one argument',
        ),
        (
            {**BASE, "expectBashMatches": ["ok", 3]},
            'field "expectBashMatches[1]": expected a regular expression string, got integer',
        ),
        (
            {**BASE, "rubric": "quality.md"},
            'field "rubric": give the name without ".md" ("quality")',
        ),
        ({**BASE, "files": {"a": ""}, "verify": []}, 'field "verify": must not be an empty array'),
        ({**BASE, "expectTool": "", "forbidTools": ["x"]}, 'field "expectTool": must not be empty'),
        ({**BASE, "id": 7, "expectTool": "x"}, 'field "id": expected a string, got integer'),
        *(
            (
                {**BASE, "id": bad, "expectTool": "x"},
                f'field "id": {json.dumps(bad[:60])} may hold only letters, digits, ".", "_" '
                'and "-", start with a letter or digit and be at most 128 characters (it names '
                "the case's tape file)",
            )
            for bad in ("../../etc/x", "a/b", ".hidden", "two words", "x" * 129)
        ),
    ],
)
def test_each_refusal_names_the_field(
    tmp_path: Path, line: dict[str, object] | str, message: str
) -> None:
    assert _problems(tmp_path, line) == [message]


def test_an_unknown_field_far_from_any_name_gets_no_suggestion(tmp_path: Path) -> None:
    assert _problems(tmp_path, {**BASE, "expectTool": "x", "zzzz": 1}) == ['unknown field "zzzz"']


def test_lines_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps({**BASE, "expectTool": "x"}).encode() + b'\n{"id": "\xff"}\n')
    with pytest.raises(CaseError) as info:
        load_suites([path], rubrics_dir=tmp_path)
    assert info.value.problems == (Problem(str(path), 2, "not UTF-8 (byte 9 of the line)"),)


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", {**BASE, "id": "same", "expectTool": "x"}, "{")
    b = _write(tmp_path / "b.jsonl", {**BASE, "id": "same", "expectTool": "x"})
    missing = tmp_path / "gone.jsonl"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CaseError) as info:
        load_suites([a, b, missing, empty], rubrics_dir=tmp_path)
    assert isinstance(info.value, ScoringError)
    assert [str(p) for p in info.value.problems] == [
        f"{missing}: no such file or folder",
        f"{empty}: no suite files (*.jsonl) in this folder",
        f"{a}:2: invalid JSON at column 2: Expecting property name enclosed in double quotes",
        f'{b}:1: duplicate id "same" (first defined at {a}:1)',
    ]
    assert str(info.value).splitlines() == [str(p) for p in info.value.problems]


def test_two_suites_with_one_name_and_an_empty_suite_are_refused(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    first = _write(tmp_path / "s.jsonl", {**BASE, "expectTool": "x"})
    second = _write(tmp_path / "x" / "s.jsonl", {**BASE, "id": "c2", "expectTool": "x"})
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    with pytest.raises(CaseError) as info:
        load_suites([first, second, blank, first], rubrics_dir=tmp_path)
    assert [str(p) for p in info.value.problems] == [
        f'{second}: suite name "s" is already used by {first}',
        f"{blank}: the suite has no cases",
    ]


def test_select_by_suite_and_case_prefix() -> None:
    suites = load_suites([GOOD], rubrics_dir=RUBRICS)
    everything = select(suites)
    assert everything == suites
    chosen = select(suites, cases=("f",))
    assert [(s.name, [c.id for c in s.cases]) for s in chosen] == [
        ("coding", ["fix-off-by-one"]),
        ("trajectory", ["find-symbol-uses-grep"]),
    ]
    only = select(suites, suite="trajectory", cases=("answer-",))
    assert [c.id for s in only for c in s.cases] == ["answer-without-tools"]
    several = select(suites, cases=("fix-off-by-one", "answer-"))
    assert [c.id for s in several for c in s.cases] == ["fix-off-by-one", "answer-without-tools"]


def test_an_exact_id_wins_over_a_prefix(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        {**BASE, "id": "read", "expectTool": "x"},
        {**BASE, "id": "read-more", "expectTool": "x"},
    )
    suites = load_suites([path], rubrics_dir=tmp_path)
    assert [c.id for s in select(suites, cases=("read",)) for c in s.cases] == ["read"]
    assert [c.id for s in select(suites, cases=("rea",)) for c in s.cases] == [
        "read",
        "read-more",
    ]
    assert split_cases(("a,b", " c ,", "a")) == ("a", "b", "c")


def test_a_selection_of_nothing_is_an_error() -> None:
    suites = load_suites([GOOD], rubrics_dir=RUBRICS)
    with pytest.raises(SelectionError, match=r'no suite named "judge" \(did you mean "judged"\?\)'):
        select(suites, suite="judge")
    with pytest.raises(
        SelectionError, match='no case id in suite "judged" is or starts with "fix"'
    ):
        select(suites, suite="judged", cases=("fix",))
    with pytest.raises(SelectionError, match="close ids: fix-off-by-one"):
        select(suites, cases=("fix-of-by-one",))


def test_the_documented_examples_are_valid_cases(tmp_path: Path) -> None:
    docs = (Path(__file__).parents[1] / "docs" / "cases.md").read_text(encoding="utf-8")
    examples = re.findall(r"```json\n(.*?)\n```", docs, re.S)
    (tmp_path / "answer-quality.md").write_text("# rubric\n")
    suite = _write(tmp_path / "docs.jsonl", *examples)
    (loaded,) = load_suites([suite], rubrics_dir=tmp_path)
    assert {c.kind for c in loaded.cases} == set(CaseKind)
    assert len(loaded.cases) == len(examples) == 4
