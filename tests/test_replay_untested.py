"""A replay that could not test something never passes: exit 2, one clear line, no traceback.

Missing, empty and all-garbage cassette folders, a truncated tape, a selected
case with no recording (and its opt-out), and a tape written by ``evaltape
script`` each say what could not be tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"


def case(case_id: str) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": f"say {case_id}",
            "failureCategory": "replay",
            "whyModelBacked": "exercises replay",
            "expectMaxTurns": 3,
        }
    )


def project_with(root: Path, *case_ids: str) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "basic.jsonl").write_text("".join(case(c) + "\n" for c in case_ids))
    (root / "evaltape.toml").write_text('agent = "chat_agent:run"\n')
    return root


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALTAPE_"))}
    env["PYTHONPATH"] = str(AGENTS)
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused replay; no traceback anywhere."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("evaltape: error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0].removeprefix("evaltape: error: ")


RECORD_INTO_CASSETTES = (
    "record into the cassettes with `evaltape live --update-cassettes`, then replay"
)
"""The next step a replay with no cassettes names when no live run was recorded either."""


def test_a_missing_cassettes_folder_is_nothing_to_replay(tmp_path: Path) -> None:
    project = project_with(tmp_path / "p", "hello")
    line = refused(evaltape(project, "replay"))
    assert line == (
        f"cassettes: no such file or folder; nothing to replay; {RECORD_INTO_CASSETTES}"
    )


def test_an_empty_cassettes_folder_is_nothing_to_replay(tmp_path: Path) -> None:
    project = project_with(tmp_path / "p", "hello")
    (project / "cassettes" / "basic").mkdir(parents=True)
    assert (
        refused(evaltape(project, "replay"))
        == f"no tapes (*.tape) in cassettes; nothing to replay; {RECORD_INTO_CASSETTES}"
    )


def test_an_all_garbage_folder_names_each_tape(tmp_path: Path) -> None:
    project = project_with(tmp_path / "p", "hello")
    folder = project / "cassettes" / "basic"
    folder.mkdir(parents=True)
    (folder / "hello.tape").write_bytes(b"this is not a tape at all\n" * 10)
    result = evaltape(project, "replay")
    line = refused(result)
    assert line.endswith("cassettes/basic/hello.tape: not an evaltape tape (bad magic)")


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A project whose cases one and two are recorded live; the server is gone."""
    project = project_with(tmp_path / "p", "one", "two")
    with ChatServer() as server:
        live = evaltape(
            project, "live", "--update-cassettes", "-m", "fake-1", "--base-url", server.url
        )
    assert live.returncode == 0, live.stdout + live.stderr
    return project


def test_a_case_with_no_recording_fails_unless_allowed(recorded: Path) -> None:
    suite = recorded / "evals" / "basic.jsonl"
    suite.write_text(suite.read_text() + case("three") + "\n")
    result = evaltape(recorded, "replay")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "UNTESTED 1 selected case(s) have no recording: three (record them with evaltape live, "
        "or pass --allow-unrecorded)"
    ) in result.stdout.splitlines()
    assert (
        result.stdout.splitlines()[-1]
        == "FAIL: 1 problem left something untested (see UNTESTED above)"
    )
    allowed = evaltape(recorded, "replay", "--allow-unrecorded")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "no recording (allowed): three" in allowed.stderr
    assert allowed.stdout.splitlines()[-1] == "OK: 2 attempts replayed, harness unchanged"


def test_a_truncated_tape_is_untested_and_the_rest_still_replays(recorded: Path) -> None:
    tape = recorded / "cassettes" / "basic" / "two.tape"
    tape.write_bytes(tape.read_bytes()[:-7])
    result = evaltape(recorded, "replay")
    assert result.returncode == 2, result.stdout + result.stderr
    untested = [ln for ln in result.stdout.splitlines() if ln.startswith("UNTESTED ")]
    assert untested and all("two.tape" in ln for ln in untested)
    assert "basic/one" not in " ".join(untested)
    assert "Traceback" not in result.stderr
    assert result.stdout.splitlines()[-1].startswith("FAIL: ")


def test_a_script_tape_says_why_it_is_not_replayed(tmp_path: Path) -> None:
    project = project_with(tmp_path / "p", "hello")
    script = project / "hello.json"
    script.write_text(
        json.dumps({"model": "scripted-1", "case": "hello", "responses": [{"text": "hi"}]})
    )
    written = evaltape(project, "script", str(script), "-o", str(project / "hello.tape"))
    assert written.returncode == 0, written.stderr
    line = refused(evaltape(project, "replay", "hello.tape"))
    assert "hello.tape: session" in line
    assert "is a script session, not a live recording; only live sessions are replayed" in line
