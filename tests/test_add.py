"""``evaltape add`` as a user runs it: a draft case from a recorded session, checked by
``evaltape validate`` and by scoring it against the session it came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from builders import chat_exchange

from evaltape.recorder import (
    Mode,
    SessionStarted,
    Status,
    TapeReader,
    fold,
    open_session,
)
from evaltape.scoring import load_suites, score_session

REPO = Path(__file__).parent.parent
URL = "http://127.0.0.1:9/v1/chat/completions"
PROMPT = "Where is HANG_THRESHOLD_MS defined? Just tell me the file."


def tool_turn(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def write_session(tape: Path, session_id: str, case_id: str = "find-it") -> None:
    """User turn 1: bash (absolute path inside a command), grep, answer.  User turn 2: read."""
    bash = tool_turn("c1", "bash", {"command": "ls /tmp/evaltape-ws-81x/src/app", "timeout": 5})
    grep = tool_turn(
        "c2", "grep", {"pattern": "HANG_THRESHOLD", "path": "/tmp/evaltape-ws-81x/src"}
    )
    read = tool_turn("c3", "read", {"path": "/tmp/evaltape-ws-81x/src/app/config.py"})
    answer = {"role": "assistant", "content": "src/app/config.py"}
    m1: list[dict[str, object]] = [{"role": "system", "content": "Be brief."}]
    m1.append({"role": "user", "content": PROMPT})
    m2 = [*m1, bash, {"role": "tool", "tool_call_id": "c1", "content": "config.py"}]
    m3 = [*m2, grep, {"role": "tool", "tool_call_id": "c2", "content": "config.py:3"}]
    m4 = [*m3, answer, {"role": "user", "content": "Now show me the line."}]
    header = SessionStarted(
        session_id=session_id, started_at=0.0, case_id=case_id, model="gpt-x", mode=Mode.LIVE
    )
    writer = open_session(tape, header, clock=lambda: 9.0)
    for i, (sent, reply) in enumerate([(m1, bash), (m2, grep), (m3, answer), (m4, read)], start=0):
        writer.append(chat_exchange(float(i), sent, reply))
    writer.end(Status.COMPLETED)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evaltape.toml").write_text("")
    write_session(tmp_path / "found.tape", "aa" * 8)
    write_session(tmp_path / "found.tape", "bb" * 8)
    return tmp_path


def add(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "add", *args],
        cwd=project,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def notes(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.removeprefix("note: ") for line in done.stderr.splitlines()]


@pytest.mark.slow
def test_draft_from_the_trace_with_notes_that_warn_first(project: Path) -> None:
    done = add(project, "found.tape", "--session", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    draft = json.loads(lines[0])
    assert list(draft) == [
        "id",
        "prompt",
        "failureCategory",
        "whyModelBacked",
        "model",
        "expectTool",
        "expectInArgs",
        "expectMaxTurns",
    ]
    assert draft["id"] == "find-it-aaaaaa"
    assert draft["prompt"] == PROMPT
    assert draft["failureCategory"].startswith("TODO:")
    assert draft["whyModelBacked"].startswith("TODO:")
    assert draft["model"] == "gpt-x"
    assert draft["expectTool"] == "bash"
    assert draft["expectInArgs"] == {"command": "src/app", "timeout": 5}
    assert draft["expectMaxTurns"] == 3  # user turn 1 took three model calls

    said = notes(done)
    assert said[0].startswith("this draft records what the session did")
    assert "wrong thing" in said[0]
    assert "found.tape holds 2 sessions; this is #1 (aaaaaaaaaaaaaaaa)" in said[1]
    assert any("expectMaxTurns is the observed count (3 turns); loosen it" in n for n in said)
    shortened = [n for n in said if "absolute path" in n]
    assert shortened == [
        'expectInArgs.command: "ls /tmp/evaltape-ws-81x/src/app" names the absolute path '
        '"/tmp/evaltape-ws-81x/src/app"; the needle is now "src/app" alone (a folder of the '
        "recording machine never matches elsewhere)"
    ]
    assert any("it also called grep" in n for n in said)
    assert any("has 2 user turns" in n and "--turn K" in n for n in said)


@pytest.mark.slow
def test_the_draft_validates_and_passes_on_the_session_it_came_from(project: Path) -> None:
    done = add(project, "found.tape")
    assert done.returncode == 0, done.stderr
    suite = project / "evals" / "harvested.jsonl"
    suite.write_text(done.stdout)  # what `evaltape add T >> evals/harvested.jsonl` leaves
    check = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "validate"],
        cwd=project,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    [case] = load_suites([suite], rubrics_dir=project)[0].cases
    last = list(TapeReader(project / "found.tape").sessions())[-1]
    session = fold(last.events)
    # the whole session has 4 turns; the draft covers the first user turn (3 turns) only
    assert not score_session(case, session).passed
    assert "4 turns > max 3" in score_session(case, session).reason
    # with the turn budget loosened, the shortened needles still match what was sent
    loosened = score_session(attrs.evolve(case, expect_max_turns=4), session)
    assert loosened.passed, loosened.reason
    assert [c.name for c in loosened.checks][-2:] == ["expectTool", "expectInArgs"]


@pytest.mark.slow
def test_turn_k_drafts_the_kth_user_message_and_its_turns(project: Path) -> None:
    done = add(project, "found.tape", "--turn", "2", "--session", "bbbb")
    assert done.returncode == 0, done.stderr
    draft = json.loads(done.stdout)
    assert draft["prompt"] == "Now show me the line."
    assert draft["expectTool"] == "read"
    assert draft["expectInArgs"] == {"path": "app/config.py"}
    assert draft["expectMaxTurns"] == 1
    said = notes(done)
    assert any("is drafted on its own" in n for n in said)
    assert any(
        '"/tmp/evaltape-ws-81x/src/app/config.py" shortened to "app/config.py"' in n for n in said
    )


@pytest.mark.slow
def test_write_appends_and_refuses_a_duplicate_id(project: Path) -> None:
    suite = project / "evals" / "trajectory.jsonl"
    suite.write_text(
        '{"id": "old", "prompt": "p", "failureCategory": "c", "whyModelBacked": "w", '
        '"expectMaxTurns": 2}'
    )  # no newline at the end
    first = add(project, "found.tape", "--write", "trajectory", "--id", "where-is-it")
    assert first.returncode == 0, first.stderr
    assert "appended to evals/trajectory.jsonl:2" in first.stderr
    rows = [json.loads(line) for line in suite.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["old", "where-is-it"]
    assert rows[1] == json.loads(first.stdout)

    again = add(project, "found.tape", "--write", "trajectory", "--id", "where-is-it")
    assert again.returncode == 2
    assert again.stderr.strip() == (
        'evaltape: error: duplicate id "where-is-it" (already at evals/trajectory.jsonl:2); '
        "choose another with --id"
    )
    assert again.stdout == ""
    assert len(suite.read_text().splitlines()) == 2


@pytest.mark.slow
def test_write_refuses_a_coding_suite(project: Path) -> None:
    coding = project / "evals" / "fixes.jsonl"
    coding.write_text(
        json.dumps(
            {
                "id": "fix",
                "prompt": "fix it",
                "failureCategory": "code-edit",
                "whyModelBacked": "w",
                "files": {"a.py": "x = 1\n"},
                "verify": "python a.py",
            }
        )
        + "\n"
    )
    for name in ("fixes", "coding"):
        done = add(project, "found.tape", "--write", name)
        assert done.returncode == 2
        assert f'suite "{name}" is a coding suite' in done.stderr
        assert "not the files the case must start from" in done.stderr
    assert len(coding.read_text().splitlines()) == 1
    assert not (project / "evals" / "coding.jsonl").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--session", "3"), "no session #3; the tape holds 2"),
        (("--session", "cc"), 'no session with an id starting "cc"'),
        (("--turn", "3"), "has 2 user turns; --turn 3 is out of range"),
        (("--write", "../x"), "--write takes a suite name"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    done = add(project, "found.tape", *args)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.splitlines()) == 1
    assert done.stdout == ""


@pytest.mark.slow
def test_a_file_that_is_not_a_tape_is_refused(project: Path) -> None:
    (project / "notes.txt").write_text("hello")
    done = add(project, "notes.txt")
    assert done.returncode == 2
    assert "notes.txt" in done.stderr and "Traceback" not in done.stderr
