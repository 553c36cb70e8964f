"""Replay catches a harness bug that no request diff can see.

A copy of the reference agent fixes ``fix-off-by-one`` live against a local
server that plays a competent model under the agent's forced protocol.  Then
the copy's ``edit`` tool is broken so that it writes the fixed text to the
wrong file but answers exactly as before: every request the agent sends is
byte-for-byte the recorded one, so the tape serves the whole attempt, and
only the rescored end state (the case's ``verify``) shows the bug, as a
REGRESSION.  A tool whose answer changes instead makes the requests differ,
which replay reports as a harness change (the tool's result changed), never
as a stale recording to re-record.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from agents.forced_chat_server import ForcedChatServer
from builders import forced_agent_env

from evaltape.recorder import TapeReader, fold
from evaltape.scoring import Verdict, read_record, resolve_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
CASE_ID = "fix-off-by-one"
SUITE = "coding"
AGENT = "agent_under_test"
TOOLS_PY = Path(AGENT) / "_tools.py"
MODEL = "fake-model"
ANSWER = "Fixed add() in calc.py: it now returns a + b."
DETAIL = "test server in tests/agents/forced_chat_server.py"


def case_line() -> str:
    """The case exactly as the repository's suite has it."""
    suite = REPO / "evals" / f"{SUITE}.jsonl"
    lines = [ln for ln in suite.read_text().splitlines() if json.loads(ln).get("id") == CASE_ID]
    assert len(lines) == 1, f"{suite} should hold {CASE_ID} once"
    return lines[0]


def make_project(root: Path) -> Path:
    """The agent copied in (importing itself, not the repo), the case, the settings."""
    shutil.copytree(
        REPO / "evals" / "agent", root / AGENT, ignore=shutil.ignore_patterns("__pycache__")
    )
    for module in (root / AGENT).glob("*.py"):
        module.write_text(module.read_text().replace("evals.agent.", f"{AGENT}."))
        assert not re.search(r"^(from|import) evals\b", module.read_text(), re.MULTILINE)
    (root / "suites").mkdir()
    (root / "suites" / f"{SUITE}.jsonl").write_text(case_line() + "\n")
    settings = {
        "suites": "suites",
        "cassettes": "cassettes",
        "results": "results",
        "agent": f"{AGENT}:run",
    }
    (root / "evaltape.toml").write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    return root


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = forced_agent_env()
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def break_tool(project: Path, intact: str, broken: str) -> None:
    """Change one piece of the copied tools' source, which must occur exactly once."""
    path = project / TOOLS_PY
    source = path.read_text()
    assert source.count(intact) == 1, f"{intact!r} should occur once in {path}"
    path.write_text(source.replace(intact, broken))


def report_lines(result: subprocess.CompletedProcess[str], word: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{word} ")]


def board(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    return [line.split() for line in result.stdout.splitlines() if line.startswith(SUITE)]


@attrs.frozen
class Recorded:
    project: Path
    live: subprocess.CompletedProcess[str]
    server: ForcedChatServer
    fixture: dict[str, str]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """One live attempt at the case, recorded; the server is stopped afterwards."""
    fixture = json.loads(case_line())["files"]
    assert fixture["calc.py"].count("a - b") == 1  # the bug the model is to fix
    plan = [("edit", {"path": "calc.py", "old": "a - b", "new": "a + b"})]
    project = make_project(tmp_path_factory.mktemp("recorded"))
    with ForcedChatServer(plan, ANSWER) as server:
        live = evaltape(
            project,
            "live",
            "--update-cassettes",
            "-m",
            MODEL,
            "--base-url",
            server.url,
            "--cases",
            CASE_ID,
            "--source",
            "simulated",
            "--source-detail",
            DETAIL,
        )
    yield Recorded(project=project, live=live, server=server, fixture=fixture)


@pytest.fixture
def project(recorded: Recorded, tmp_path: Path) -> Path:
    """A private copy of the recorded project, free to break."""
    return Path(shutil.copytree(recorded.project, tmp_path / "project"))


def verify_failure(fixture: dict[str, str], tmp_path: Path) -> str:
    """What the case's checker says about the unfixed code, computed by running it."""
    folder = tmp_path / "unfixed"
    folder.mkdir()
    for name, text in fixture.items():
        (folder / name).write_text(text)
    run = subprocess.run(
        [sys.executable, "check.py"], cwd=folder, capture_output=True, text=True, timeout=30
    )
    assert run.returncode != 0
    return run.stderr.strip().splitlines()[-1]


def test_the_simulated_model_fixes_the_case_live(recorded: Recorded) -> None:
    live = recorded.live
    assert live.returncode == 0, live.stdout + live.stderr
    assert f"{MODEL} :: {CASE_ID} (attempt 1) PASS" in live.stderr
    assert f"{MODEL}: 1/1 passed" in live.stdout
    attempt = read_record(resolve_run(recorded.project / "results")).attempts
    assert [(a.case_id, a.verdict) for a in attempt] == [(CASE_ID, Verdict.PASSED)]

    choices = [r["tool_choice"] for r in recorded.server.requests]
    named = [c["function"]["name"] if isinstance(c, dict) else c for c in choices]
    assert named == ["next_action", "edit", "next_action", "none"]
    assert not any(r.get("stream") for r in recorded.server.requests)

    (session,) = TapeReader(recorded.project / "cassettes" / SUITE / f"{CASE_ID}.tape").sessions()
    view = fold(session.events)
    assert view.header.source_detail == DETAIL
    assert view.reply == ANSWER
    files = {f.path: f.data.decode() for f in view.workspace}
    assert files["calc.py"] == recorded.fixture["calc.py"].replace("a - b", "a + b")
    assert files["check.py"] == recorded.fixture["check.py"]


def test_replay_of_the_intact_harness_is_unchanged_and_repeatable(
    recorded: Recorded, project: Path
) -> None:
    seen = len(recorded.server.requests)
    first = evaltape(project, "replay")
    second = evaltape(project, "replay")
    for result in (first, second):
        assert result.returncode == 0, result.stdout + result.stderr
        assert board(result) == [[SUITE, "1", "1", "1/1", "1/1", "0", "0", "0", "0", "0"]]
        assert not report_lines(result, "REGRESSION") and not report_lines(result, "STALE")
    assert first.stdout == second.stdout
    assert len(recorded.server.requests) == seen
    replay = read_record(resolve_run(project / "results"))
    assert [(a.case_id, a.verdict) for a in replay.attempts] == [(CASE_ID, Verdict.PASSED)]


def test_an_edit_written_to_the_wrong_file_is_a_regression(
    recorded: Recorded, project: Path, tmp_path: Path
) -> None:
    # The edited text lands in calc.py.new; the message is the same as before,
    # so every request matches the tape and only the end state differs.
    break_tool(
        project,
        'with open(real, "w", encoding="utf-8") as f:',
        'with open(real + ".new", "w", encoding="utf-8") as f:',
    )
    result = evaltape(project, "replay")
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = report_lines(result, "REGRESSION")
    assert line.startswith(f"REGRESSION {SUITE}/{CASE_ID} {MODEL}: 1 of 1 attempt (recorded: pass;")
    replayed = line.split("; replayed: ", 1)[1]
    assert "verify exited 1" in replayed
    assert verify_failure(recorded.fixture, tmp_path) in replayed
    assert not report_lines(result, "STALE")
    assert board(result) == [[SUITE, "1", "1", "1/1", "0/1", "1", "0", "0", "0", "0"]]
    # The tape served the whole attempt; the fix went to the wrong file.
    (attempt,) = read_record(resolve_run(project / "results")).attempts
    (session,) = TapeReader(project / "results" / attempt.tape).sessions()
    view = fold(session.events)
    assert view.reply == ANSWER
    files = {f.path: f.data.decode() for f in view.workspace}
    assert files["calc.py"] == recorded.fixture["calc.py"]
    assert files["calc.py.new"] == recorded.fixture["calc.py"].replace("a - b", "a + b")


def test_a_changed_tool_answer_is_a_harness_change_not_a_stale_recording(
    recorded: Recorded, project: Path
) -> None:
    break_tool(project, 'return f"edited {self._rel(real)}"', 'return f"edited {self._rel(real)}!"')
    result = evaltape(project, "replay")
    assert result.returncode == 1, result.stdout + result.stderr
    (group,) = report_lines(result, "HARNESS")
    assert (
        group
        == f"HARNESS CHANGED tool result changed: edit (1 distinct edit): 1 attempt, suite {SUITE}"
    )
    # The first request after the edit carries its result: the first "tool" message.
    after_edit = recorded.server.requests[2]["messages"]
    index = next(n for n, m in enumerate(after_edit) if m["role"] == "tool")
    (example,) = [ln for ln in result.stdout.splitlines() if ln.startswith("  e.g. ")]
    assert example.startswith(
        f"  e.g. {SUITE}/{CASE_ID} {MODEL} (attempt 1): tool result changed: edit"
    )
    assert f"(at messages[{index}].content)" in example
    diff = [ln.strip() for ln in result.stdout.splitlines()]
    assert f"-{after_edit[index]['content']}" in diff  # the recorded tool result
    assert f"+{after_edit[index]['content']}!" in diff  # what the tool says now
    assert not report_lines(result, "STALE") and not report_lines(result, "REGRESSION")
    assert board(result) == [[SUITE, "1", "1", "1/1", "0/1", "0", "0", "1", "0", "0"]]


def test_assume_same_model_says_the_change_then_fails_verify(
    recorded: Recorded, project: Path
) -> None:
    # The edit is not saved and says so: the request differs, so strict replay stops at it;
    # assuming the model answered as recorded, the attempt goes on and verify fails.
    break_tool(
        project,
        'with open(real, "w", encoding="utf-8") as f:\n'
        "            f.write(text.replace(old, new, 1))\n"
        '        return f"edited {self._rel(real)}"',
        'return f"edited {self._rel(real)} (dry run)"',
    )
    strict = evaltape(project, "replay")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "assuming" not in strict.stdout
    result = evaltape(project, "replay", "--assume-same-model")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "--assume-same-model: where a request no longer matched" in result.stdout
    (example,) = [ln for ln in result.stdout.splitlines() if ln.startswith("  e.g. ")]
    assert "tool result changed: edit" in example
    assert "; assuming the model answered as recorded: REGRESSION (" in example
    assert "verify exited 1" in example
    record = read_record(resolve_run(project / "results"))
    assert "assume-same-model" in record.notes
