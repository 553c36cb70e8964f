"""Bad flags are refused in one line before anything runs, and tape text printed on a
terminal cannot drive it (real subprocesses, a real 127.0.0.1 server, a real tape)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import (
    FactKind,
    HarnessEvent,
    Mode,
    RunnerFact,
    SessionStarted,
    Source,
    Status,
    open_session,
)

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(AGENTS), str(REPO)]),
        OPENAI_API_KEY="sk-test-0123456789abcdefghijklmnop",
    )
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (
            ["-m", "fake-1", "--seed", str(2**70)],
            f"--seed must be a whole number from 0 to {2**63 - 1}, got {2**70}",
        ),
        (["-m", "fake-1", "--seed", "-1"], f"--seed must be a whole number from 0 to {2**63 - 1}"),
        (
            ["-m", "fake-1", "--base-url", "not a url"],
            "--base-url: expected an http:// or https:// URL, got 'not a url'",
        ),
        (
            ["-m", "fake-1", "--base-url", "ftp://127.0.0.1/v1"],
            "--base-url: expected an http:// or https:// URL, got 'ftp://127.0.0.1/v1'",
        ),
        (["-m", ""], "-m/--model must not be empty"),
        (["--compare", "fake-1, ,fake 2"], "-m/--model 'fake 2': a model name has no spaces"),
    ],
)
def test_a_bad_flag_is_refused_in_one_line_before_any_attempt(
    tmp_path: Path, server: ChatServer, flags: list[str], line: str
) -> None:
    (tmp_path / "evals").mkdir()
    case = {
        "id": "hello",
        "prompt": "say hello",
        "failureCategory": "runner",
        "whyModelBacked": "exercises the runner against a fake model",
        "expectMaxTurns": 3,
    }
    (tmp_path / "evals" / "basic.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "evaltape.toml").write_text(
        f'agent = "chat_agent:run"\nbase_url = "{server.url}"\nmodel = "fake-1"\n'
    )
    done = evaltape(tmp_path, "live", *flags)
    assert done.returncode == 2, done.stderr
    (printed,) = done.stderr.splitlines()
    assert printed.startswith("evaltape: error: " + line), printed
    assert server.requests == []
    assert not (tmp_path / ".evaltape").exists()


@pytest.mark.slow
def test_the_same_project_runs_when_the_flags_are_good(tmp_path: Path, server: ChatServer) -> None:
    (tmp_path / "evals").mkdir()
    case = {
        "id": "hello",
        "prompt": "say hello",
        "failureCategory": "runner",
        "whyModelBacked": "exercises the runner against a fake model",
        "expectMaxTurns": 3,
    }
    (tmp_path / "evals" / "basic.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "evaltape.toml").write_text('agent = "chat_agent:run"\nmodel = "fake-1"\n')
    done = evaltape(tmp_path, "live", "--seed", str(2**63 - 1), "--base-url", server.url)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 1 and server.requests[0]["seed"] == 2**63 - 1


HOSTILE = "\x1b[2J\x1b[H\x1b]52;c;ZXZpbA==\x07\x9b31m\u202egnp.exe"
"""Clear the screen, home the cursor, write the clipboard (OSC 52), a C1 CSI, and a
right-to-left override."""


@pytest.mark.slow
def test_show_prints_control_sequences_of_a_tape_as_visible_escapes(tmp_path: Path) -> None:
    tape = tmp_path / "hostile.tape"
    header = SessionStarted(
        session_id="abcdefabcdefabcd",
        started_at=1_700_000_000.0,
        case_id="c" + HOSTILE,
        attempt=0,
        model="m" + HOSTILE,
        mode=Mode.LIVE,
        source=Source.SIMULATED,
    )
    with open_session(tape, header) as writer:
        writer.append(HarnessEvent(at=0.1, name="tool" + HOSTILE, fields=(("out", HOSTILE),)))
        writer.append(RunnerFact(at=0.2, fact=FactKind.NOTE, message=HOSTILE))
        writer.end(Status.FAILED, "reason" + HOSTILE)
    done = evaltape(tmp_path, "show", str(tape))
    assert done.returncode == 0, done.stderr
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in done.stdout
    assert done.stdout.count("\\x1b[2J\\x1b[H\\x1b]52;c;ZXZpbA==\\x07\\x9b31m\\u202egnp.exe") >= 5
    as_json = evaltape(tmp_path, "show", "--json", str(tape))
    assert "\x1b" not in as_json.stdout and "\\u001b[2J" in as_json.stdout
