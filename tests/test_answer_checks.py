"""Answer checks (``expectAnswer``) and custom scorers named as ``module:function``.

Answer checks read the final reply: each kind passes and fails as the table
says, and they run after the trajectory rules and before the outcome checks.
A custom scorer named in a case or in the config runs after the outcome
checks.  Everything wrong with either is refused when the suites load, with
one line naming the file, the line and the field, and exit 2.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from builders import chat_exchange, tool_call

from evaltape.recorder import Event, SessionEnded, SessionStarted, Status, fold
from evaltape.scoring import Case, Score, load_suites, score_session

BASE: dict[str, Any] = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
HEADER = SessionStarted(session_id="ab" * 8, started_at=1_700_000_000.0, case_id="c", model="m")


def session(reply: str, *tools: str) -> Any:
    """A completed session: one turn calling ``tools`` (if any), then the text ``reply``."""
    events: list[Event] = [HEADER]
    asked = [{"role": "user", "content": "p"}]
    if tools:
        calls = [tool_call(f"call_{i}", name, {}) for i, name in enumerate(tools)]
        events.append(chat_exchange(0.0, asked, {"role": "assistant", "tool_calls": calls}))
    events.append(chat_exchange(1.0, asked, {"role": "assistant", "content": reply}))
    events.append(SessionEnded(at=2.0, status=Status.COMPLETED))
    return fold(events)


def load(tmp_path: Path, fields: dict[str, Any], **kwargs: Any) -> Case:
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps({**BASE, **fields}) + "\n", encoding="utf-8")
    (suite,) = load_suites([path], rubrics_dir=tmp_path, code_dir=tmp_path, **kwargs)
    return suite.cases[0]


JSON_REPLY = '{"total": 4242, "items": [{"name": "a"}], "ok": true}'
KINDS = [
    # (expectAnswer, reply, passes, the check's name, the reason when it fails)
    ({"contains": "4242"}, "The answer is 4242.", True, "contains", None),
    ({"contains": "4242"}, "The answer is 42.", False, "contains",
     'reply does not contain "4242": "The answer is 42."'),
    ({"contains": ["42", "answer"]}, "42 is the reply", False, "contains",
     'reply does not contain "answer": "42 is the reply"'),
    ({"matches": r"\b4242\b"}, "so: 4242.", True, "matches", None),
    ({"matches": r"^\d+$"}, "about 4242", False, "matches",
     'reply does not match /^\\d+$/: "about 4242"'),
    ({"equals": "4242"}, "  4242\n", True, "equals", None),
    ({"equals": "4242"}, "4242!", False, "equals", 'reply is "4242!", expected "4242"'),
    ({"json": {"total": 4242, "items.0.name": "a", "ok": True}}, JSON_REPLY, True, "json", None),
    ({"json": {"total": 4242.0}}, "```json\n" + JSON_REPLY + "\n```", True, "json", None),
    ({"json": {"total": 42}}, JSON_REPLY, False, "json",
     "reply JSON total is 4242, expected 42"),
    ({"json": {"ok": 1}}, JSON_REPLY, False, "json", "reply JSON ok is true, expected 1"),
    ({"json": {"items.3.name": "a"}}, JSON_REPLY, False, "json",
     "reply JSON items.3.name: missing (no index 3 in an array of 1)"),
    ({"json": {"total": 4242}}, "total: 4242", False, "json",
     'reply is not JSON: "total: 4242"'),
]  # fmt: skip


@pytest.mark.parametrize(("expect", "reply", "passes", "kind", "reason"), KINDS)
def test_each_kind_of_answer_check(
    tmp_path: Path, expect: dict[str, Any], reply: str, passes: bool, kind: str, reason: str | None
) -> None:
    case = load(tmp_path, {"expectAnswer": expect})
    score = score_session(case, session(reply))
    assert score.passed is passes
    assert score.checks[-1].name == f"expectAnswer.{kind}"
    if reason is not None:
        assert score.reason == reason


def test_answer_checks_run_in_a_fixed_order_and_stop_at_the_first_failure(tmp_path: Path) -> None:
    expect = {"json": {"x": 1}, "equals": "nope", "matches": "z", "contains": "4242"}
    case = load(tmp_path, {"expectAnswer": expect})
    passing = score_session(case, session("4242"))
    assert [c.name for c in passing.checks][-2:] == [
        "expectAnswer.contains",
        "expectAnswer.matches",
    ]
    assert passing.reason == 'reply does not match /z/: "4242"'


def test_trajectory_rules_come_before_the_answer(tmp_path: Path) -> None:
    case = load(tmp_path, {"forbidTools": ["write"], "expectAnswer": {"contains": "4242"}})
    score = score_session(case, session("no answer here", "write"))
    assert score.reason == "forbidden tool write fired (turn 1)"
    assert not any(c.name.startswith("expectAnswer") for c in score.checks)


def test_the_answer_comes_before_the_outcome(tmp_path: Path) -> None:
    fields = {"files": {"a.txt": "x"}, "immutable": ["a.txt"], "expectAnswer": {"equals": "ok"}}
    case = load(tmp_path, fields)
    wrong = score_session(case, session("not ok"))
    assert wrong.checks[-1].name == "expectAnswer.equals"
    assert "workspace" not in [c.name for c in wrong.checks]
    right = score_session(case, session("ok"))  # the session recorded no workspace snapshot
    names = [c.name for c in right.checks]
    assert names.index("expectAnswer.equals") < names.index("workspace")
    assert right.checks[-1].name == "workspace" and not right.passed


SCORERS = """
from evaltape.scoring import Check, Score


def cites(case, session):
    ok = "source:" in session.reply
    return Score(passed=ok, reason="cites a source" if ok else "no source cited",
                 checks=(Check(name="cites", passed=ok),))


def boom(case, session):
    raise RuntimeError("scorer bug")


def not_a_score(case, session):
    return 1
"""


def write_scorers(folder: Path, module: str) -> None:
    (folder / f"{module}.py").write_text(textwrap.dedent(SCORERS), encoding="utf-8")


def test_a_custom_scorer_named_in_a_case_runs_after_the_outcome(tmp_path: Path) -> None:
    write_scorers(tmp_path, "case_scorers")
    case = load(tmp_path, {"expectAnswer": {"contains": "4242"}, "scorer": "case_scorers:cites"})
    good = score_session(case, session("4242, source: the manual"))
    assert good.passed and [c.name for c in good.checks][-2:] == [
        "expectAnswer.contains",
        "case_scorers:cites",
    ]
    bad = score_session(case, session("4242"))
    assert not bad.passed and bad.reason == "no source cited"
    unanswered = score_session(case, session("no idea"))  # the answer check fails first
    assert "case_scorers:cites" not in [c.name for c in unanswered.checks]


def test_a_custom_scorer_named_in_the_config_applies_to_every_case(tmp_path: Path) -> None:
    write_scorers(tmp_path, "config_scorers")
    case = load(
        tmp_path,
        {"expectMaxTurns": 3},
        scorers=("config_scorers:cites",),
        scorers_from="evaltape.toml",
    )
    assert [s.spec for s in case.scorers] == ["config_scorers:cites"]
    score = score_session(case, session("plain"))
    assert score.reason == "no source cited"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("boom", "scorer broken_scorers:boom raised RuntimeError: scorer bug"),
        ("not_a_score", "scorer broken_scorers:not_a_score returned int, not a Score"),
    ],
)
def test_a_scorer_that_breaks_fails_its_check(tmp_path: Path, name: str, reason: str) -> None:
    write_scorers(tmp_path, "broken_scorers")
    case = load(tmp_path, {"scorer": f"broken_scorers:{name}"})
    score = score_session(case, session("anything"))
    assert not score.passed and score.reason == reason


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALTAPE_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


LOAD_ERRORS = [
    ({"expectAnswer": {"matches": "(unclosed"}},
     'field "expectAnswer.matches": invalid regular expression: missing ), unterminated '
     "subpattern at position 0"),
    ({"expectAnswer": {"contain": "x"}},
     'field "expectAnswer": unknown key "contain" (did you mean "contains"?)'),
    ({"expectAnswer": "4242"}, 'field "expectAnswer": expected an object, got string'),
    ({"expectAnswer": {"equals": 4242}},
     'field "expectAnswer.equals": expected a string, got integer'),
    ({"expectAnswer": {"json": {"a..b": 1}}},
     'field "expectAnswer.json": path "a..b" has an empty part'),
    ({"expectAnswer": {"contains": []}},
     'field "expectAnswer.contains": must not be an empty array'),
    ({"scorer": "no_such_module:f"},
     'field "scorer": "no_such_module:f": cannot import no_such_module: ModuleNotFoundError: '
     "No module named 'no_such_module'"),
    ({"scorer": "present:missing"},
     'field "scorer": "present:missing": present has no function missing'),
    ({"scorer": "present"}, 'field "scorer": "present" is not module:function'),
    ({"scorer": ["present:ok", 3]}, 'field "scorer[1]": expected "module:function", got integer'),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("fields", "message"), LOAD_ERRORS)
def test_bad_answer_checks_and_scorers_are_refused_at_load(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    (tmp_path / "present.py").write_text("def ok(case, session):\n    pass\n")
    (tmp_path / "evals").mkdir()
    line = json.dumps({**BASE, "expectMaxTurns": 2, **fields})
    (tmp_path / "evals" / "suite.jsonl").write_text(
        json.dumps({**BASE, "id": "ok", "expectMaxTurns": 1}) + "\n" + line + "\n"
    )
    done = evaltape(tmp_path, "validate")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"evals/suite.jsonl:2: {message}",
        "evaltape: 1 problem in 1 file; nothing was run",
    ]


@pytest.mark.slow
def test_a_bad_scorer_in_the_config_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "suite.jsonl").write_text(json.dumps({**BASE, "expectMaxTurns": 1}))
    (tmp_path / "evaltape.toml").write_text('scorers = "nowhere_mod:score"\n')
    done = evaltape(tmp_path, "validate")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        'evaltape.toml: setting "scorers": "nowhere_mod:score": cannot import nowhere_mod: '
        "ModuleNotFoundError: No module named 'nowhere_mod'"
    )
    (tmp_path / "nowhere_mod.py").write_text("def score(case, session):\n    pass\n")
    assert evaltape(tmp_path, "validate").returncode == 0


def test_a_custom_scorer_is_a_scorer(tmp_path: Path) -> None:
    """The function named is called exactly as the Scorer protocol says."""
    write_scorers(tmp_path, "proto_scorers")
    case = load(tmp_path, {"scorer": "proto_scorers:cites"})
    (named,) = case.scorers
    result = named.function(case, session("source: x"))
    assert isinstance(result, Score) and result.passed


def test_the_documented_answer_examples_load(tmp_path: Path) -> None:
    docs = (Path(__file__).parents[1] / "docs" / "cases.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```jsonl\n(.*?)\n```", docs, re.S)
    path = tmp_path / "docs.jsonl"
    path.write_text(block + "\n", encoding="utf-8")
    (suite,) = load_suites([path], rubrics_dir=tmp_path)
    total, as_json = suite.cases
    assert score_session(total, session("It is 4242.", "read")).passed
    assert not score_session(total, session("It is 42424.", "read")).passed
    assert score_session(as_json, session('{"total": 4242}')).passed
