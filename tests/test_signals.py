"""SIGTERM and SIGHUP stop ``evaltape live`` like Ctrl-C: a real subprocess against a
127.0.0.1 chat server that holds the later requests, so the signal always lands while
attempts are in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import SessionEnded, Status, TapeReader
from evaltape.scoring import RunState, Verdict, read_history, read_record, resolve_run

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


def _project(root: Path, base_url: str) -> Path:
    project = root / "project"
    (project / "evals").mkdir(parents=True)
    cases = [
        {
            "id": f"held-{n}",
            "prompt": f"[hold] number {n}",
            "failureCategory": "runner",
            "whyModelBacked": "exercises the runner against a fake model",
            "expectMaxTurns": 3,
            "files": {"notes.txt": "the case's own file\n"},
        }
        for n in range(6)
    ]
    (project / "evals" / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (project / "evaltape.toml").write_text(
        f'agent = "chat_agent:run"\nbase_url = "{base_url}"\nconcurrency = 2\n'
    )
    return project


@pytest.mark.parametrize(
    ("signum", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")]
)
def test_a_terminate_signal_cancels_the_run_like_ctrl_c(
    tmp_path: Path, server: ChatServer, signum: signal.Signals, name: str
) -> None:
    server.hold_after = 2
    server.hang = 60.0
    project = _project(tmp_path, server.url)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(AGENTS), str(REPO)]),
        OPENAI_API_KEY="sk-test-0123456789abcdefghijklmnop",
        TMPDIR=str(scratch),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "evaltape.scoring.cli", "live", "-m", "fake-1"],
        cwd=project,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("[2/"):
            break
    assert server.wait_holding(2)
    assert any(p.name.startswith("evaltape-") for p in scratch.iterdir())  # in flight
    process.send_signal(signum)
    for line in process.stderr:  # the run refuses new calls, then the held ones are answered
        if line.startswith(f"evaltape: stopping ({name})"):
            break
    server.release()
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Traceback" not in err

    results = project / ".evaltape" / "results"
    record = read_record(resolve_run(results))
    assert record.state is RunState.CANCELLED
    passed = [a for a in record.attempts if a.verdict is Verdict.PASSED]
    cancelled = [a for a in record.attempts if "cancelled" in a.reason]
    assert len(passed) == 2 and cancelled
    assert all(f"interrupted ({name})" in a.reason for a in cancelled)
    (entry,) = read_history(results)
    assert entry.run_id == record.run_id and entry.state is RunState.CANCELLED
    ends: dict[str, Status] = {}
    for tape in (results / "tapes").rglob("*.tape"):
        for session in TapeReader(tape).sessions():
            end = session.events[-1]
            assert isinstance(end, SessionEnded), "every session, in flight or not, has an end"
            ends[session.session_id] = end.status
    assert all(ends[a.session_id] is Status.INTERRUPTED for a in cancelled)
    assert sorted(p.name for p in scratch.iterdir()) == []  # no workspace left behind
