"""``evaltape trace`` as a user runs it: a run record and its tapes on disk, read back turn
by turn in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import chat_exchange, tool_call

from evaltape.recorder import (
    Exchange,
    HarnessEvent,
    Mode,
    SessionStarted,
    Status,
    open_session,
)
from evaltape.scoring import AttemptResult, RunKind, RunRecord, RunState, Verdict
from evaltape.scoring.results._record_files import write_record

REPO = Path(__file__).parent.parent
URL = "http://127.0.0.1:9/v1/chat/completions"
LONG = "".join(f"line {i}: HANG_THRESHOLD_MS = {i * 1000}\n" for i in range(200))

CASE = {
    "id": "where",
    "prompt": "Where is HANG_THRESHOLD_MS defined?",
    "failureCategory": "tool-routing",
    "whyModelBacked": "tool choice is a model decision",
    "expectTool": "grep",
    "expectInArgs": {"pattern": "HANG_THRESHOLD"},
    "expectMaxTurns": 3,
}


def exchange(at: float, messages: list[dict[str, object]], reply: dict[str, object]) -> Exchange:
    usage = {"prompt_tokens": 7, "completion_tokens": 3}
    return chat_exchange(
        at, messages, reply, duration=0.5, chunk_at=0.4,
        extra={"finish_reason": "stop", "usage": usage},
    )  # fmt: skip


def call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    return tool_call(call_id, name, args)


def write_session(tape: Path, session_id: str, pattern: str, *, judge: bool = False) -> None:
    """Three turns: grep (with thinking), read (long result), then the answer."""
    first = call("c1", "grep", {"pattern": pattern, "path": "/tmp/ws-1/src"})
    second = call("c2", "read", {"path": "/tmp/ws-1/src/config.py"})
    convo: list[dict[str, object]] = [{"role": "user", "content": CASE["prompt"]}]
    turn1 = {
        "role": "assistant",
        "content": "Searching.",
        "reasoning_content": "I should grep for it.",
        "tool_calls": [first],
    }
    turn2 = {"role": "assistant", "content": None, "tool_calls": [second]}
    after1 = [*convo, turn1, {"role": "tool", "tool_call_id": "c1", "content": "src/config.py:12"}]
    after2 = [*after1, turn2, {"role": "tool", "tool_call_id": "c2", "content": LONG}]
    header = SessionStarted(
        session_id=session_id, started_at=0.0, case_id="where", model="gpt-x", mode=Mode.LIVE
    )
    writer = open_session(tape, header, clock=lambda: 3.0)
    writer.append(exchange(0.0, convo, turn1))
    writer.append(exchange(1.0, after1, turn2))
    writer.append(exchange(2.0, after2, {"role": "assistant", "content": "In src/config.py."}))
    if judge:
        fields = (("phase", "verdict"), ("score", 4), ("rubric", "answer"), ("digest", "ab"))
        writer.append(HarnessEvent(at=2.8, name="judge", fields=fields))
    writer.end(Status.COMPLETED)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "basic.jsonl").write_text(json.dumps(CASE) + "\n")
    (tmp_path / "evaltape.toml").write_text("")
    tape = tmp_path / "cassettes" / "basic" / "where.tape"
    tape.parent.mkdir(parents=True)
    write_session(tape, "aa" * 8, "HANG_THRESHOLD", judge=True)
    write_session(tape, "bb" * 8, "HANG")
    attempts = tuple(
        AttemptResult(
            case_id="where",
            suite="basic",
            model="gpt-x",
            attempt=i,
            verdict=verdict,
            reason=reason,
            tape="basic/where.tape",
            session_id=sid,
        )
        for i, (sid, verdict, reason) in enumerate(
            [("aa" * 8, Verdict.PASSED, ""), ("bb" * 8, Verdict.FAILED, "no grep call matches")]
        )
    )
    record = RunRecord(
        run_id="20261129T120000Z-abcdef",
        kind=RunKind.LIVE,
        state=RunState.COMPLETED,
        started_at=0.0,
        models=("gpt-x",),
        suites=("basic",),
        total=2,
        attempts=attempts,
    )
    write_record(tmp_path / ".evaltape" / "results", record)
    return tmp_path


def trace(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "trace", *args],
        cwd=project,
        env=os.environ | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def blocks(text: str) -> list[list[str]]:
    return [b.splitlines() for b in text.split("\n\n")]


@pytest.mark.slow
def test_without_case_lists_the_cases_with_verdict_counts(project: Path) -> None:
    done = trace(project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("run 20261129T120000Z-abcdef (live, completed): 1 case")
    assert lines[1].split() == ["basic/where", "gpt-x", "1", "passed,", "1", "failed"]


@pytest.mark.slow
def test_each_attempt_is_a_block_with_thinking_exact_arguments_and_results(
    project: Path,
) -> None:
    done = trace(project, "20261129T120000Z", "--case", "where", "-m", "gpt-x")
    assert done.returncode == 0, done.stderr
    first, second = blocks(done.stdout)
    assert first[0] == "=== basic/where · gpt-x · attempt 1 · recorded: passed"
    assert second[0] == (
        "=== basic/where · gpt-x · attempt 2 · recorded: failed (no grep call matches)"
    )
    text = "\n".join(first)
    assert "    prompt: Where is HANG_THRESHOLD_MS defined?" in first
    assert "    thinking: I should grep for it." in first
    assert "    text: Searching." in first
    sent = json.dumps({"pattern": "HANG_THRESHOLD", "path": "/tmp/ws-1/src"})
    assert f"    call grep: {sent}" in first
    assert "      result: src/config.py:12" in first
    assert "    text: In src/config.py." in first
    assert [line for line in first if line.startswith("--- turn")] == [
        f"--- turn {n} · {n - 1}.00s +0.50s · gpt-x · HTTP 200 · 7 in / 3 out tokens · finish stop"
        for n in (1, 2, 3)
    ]
    assert "verdict now: PASSED: passed 5 checks" in first
    assert 'judge (recorded): phase="verdict" score=4 rubric="answer"' in first
    assert "more chars; --full shows all]" in text and LONG not in done.stdout
    assert "verdict now: FAILED: no grep call has arguments matching" in "\n".join(second)
    assert not any(line.startswith("judge") for line in second)


@pytest.mark.slow
def test_full_shows_every_value_whole(project: Path) -> None:
    done = trace(project, "latest", "--case", "where", "--full")
    assert done.returncode == 0, done.stderr
    assert "--full shows all" not in done.stdout
    shown = [line for line in done.stdout.splitlines() if "HANG_THRESHOLD_MS = " in line]
    assert len(shown) == 2 * 200  # every line of the long result, in both attempts


@pytest.mark.slow
def test_the_verdict_is_rescored_with_todays_case(project: Path) -> None:
    changed = CASE | {"expectMaxTurns": 2}
    (project / "evals" / "basic.jsonl").write_text(json.dumps(changed) + "\n")
    done = trace(project, "latest", "--case", "where")
    assert done.returncode == 0, done.stderr
    first = blocks(done.stdout)[0]
    assert first[0].endswith("recorded: passed")
    assert "verdict now: FAILED: 3 turns > max 2" in first


@pytest.mark.slow
def test_a_missing_session_is_said_in_its_block(project: Path) -> None:
    (project / "cassettes" / "basic" / "where.tape").unlink()
    done = trace(project, "latest", "--case", "where")
    assert done.returncode == 0, done.stderr
    assert all(
        b[1].startswith("cannot read the session:") and "no such tape" in b[1]
        for b in blocks(done.stdout)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("latest", "--case", "wher"), 'no attempt of case "wher" (did you mean "where"?)'),
        (("latest", "--cases", "where", "-m", "gpt-y"), 'did not run with model "gpt-y"'),
        (("2025",), 'no run "2025"'),
        (("latest", "--cases", "wx"), "no case id in run 20261129T120000Z-abcdef is or starts"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    done = trace(project, *args)
    assert done.returncode == 2
    # the deprecated --case spelling adds its warning line; the error itself is one line
    errors = [ln for ln in done.stderr.splitlines() if "--case is deprecated" not in ln]
    assert message in done.stderr and len(errors) == 1


@pytest.mark.slow
def test_cases_takes_exact_ids_and_prefixes_like_every_command(project: Path) -> None:
    by_case = trace(project, "--case", "where")
    for args in (("--cases", "where"), ("--cases", "whe"), ("--cases", "where,wh", "--cases", "w")):
        done = trace(project, *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout == by_case.stdout  # each case shown once, as with --case
