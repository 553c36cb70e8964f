"""A stranger's tape cannot reach out of the sandbox: real tapes, real subprocesses, real bwrap.

The attack: a recorded session whose workspace snapshot holds a ``calc.py``
that does its work when ``check.py`` imports it (``check.py`` stays
byte-identical, so the immutable check passes), and a recorded ``bash`` call
that reads a file outside the workspace.  ``evaltape rescore`` and
``evaltape replay`` must run both inside the sandbox: the file the code writes
outside does not appear, its connection to a server on 127.0.0.1 is refused,
it sees no API key, and the bash call cannot read the secret.  Unconfined
(``--no-sandbox``) the same tape scores PASS, which shows the test can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from fakeapi import FakeAPI, Reply, ToolUse

from evaltape.recorder import (
    FileEntry,
    SessionEnded,
    SessionStarted,
    TapeReader,
    WorkspaceSnapshot,
    fold,
    open_session,
)
from evaltape.scoring import Verdict, read_record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent
PLANTED = "sk-planted-0123456789abcdefghijklmnop"

CALC = "def add(a, b):\n    return a - b\n"
CHECK = "from calc import add\n\nassert add(2, 3) == 5, f'add(2, 3) returned {add(2, 3)}'\n"
EVIL = """\
import os, pathlib, socket

pathlib.Path({out!r}).parent.mkdir(parents=True, exist_ok=True)
pathlib.Path({out!r}).write_text("pwned")
keys = sorted(k for k, v in os.environ.items() if k.endswith("_API_KEY") or v.startswith("sk-"))
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    net = "connected"
except OSError as exc:
    net = type(exc).__name__
if not keys and net != "connected":
    raise RuntimeError(f"contained: socket {{net}}, keys {{keys}}")


def add(a, b):
    return a + b
"""


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(AGENTS), str(REPO)])
    env["OPENAI_API_KEY"] = PLANTED
    env["EVALTAPE_TEST_API_KEY"] = PLANTED
    env["EVALTAPE_AGENT_STRATEGY"] = "auto"
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def record_of(project: Path, done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("record: ")]
    record = read_record(project / line.removeprefix("record: "))
    return [attrs.asdict(a) for a in record.attempts]


def make_project(root: Path, base_url: str) -> Path:
    project = root / "project"
    (project / "evals").mkdir(parents=True)
    case = {
        "id": "fix-add",
        "prompt": "add() in calc.py returns the wrong result. Fix it. Do not modify check.py.",
        "failureCategory": "code-edit",
        "whyModelBacked": "whether the edit is right depends on the model",
        "agentMode": "build",
        "files": {"calc.py": CALC, "check.py": CHECK},
        "verify": "python check.py",
        "verifyTimeout": 30,
        "immutable": ["check.py"],
    }
    (project / "evals" / "coding.jsonl").write_text(json.dumps(case) + "\n")
    (project / "evaltape.toml").write_text(f'agent = "evals.agent:run"\nbase_url = "{base_url}"\n')
    return project


def plant_evil(recorded: Path, tape: Path, evil: str) -> None:
    """``tape``: the recorded session with ``calc.py`` of its snapshot replaced by ``evil``."""
    (session,) = TapeReader(recorded).sessions()
    header, *middle, end = session.events
    assert isinstance(header, SessionStarted) and isinstance(end, SessionEnded)
    with open_session(tape, header) as writer:
        for event in middle:
            if isinstance(event, WorkspaceSnapshot):
                files = tuple(
                    FileEntry(path=f.path, data=evil.encode(), mode=f.mode)
                    if f.path == "calc.py"
                    else f
                    for f in event.files
                )
                event = attrs.evolve(event, files=files)
            writer.append(event)
        writer.end(end.status, end.reason)


def test_a_strangers_tape_runs_its_code_and_its_bash_call_inside_the_sandbox(
    tmp_path: Path, api: FakeAPI, listener: Listener
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000\n")
    outside = tmp_path / "outside" / "pwned.txt"
    project = make_project(tmp_path, api.openai_url)
    command = f"cat {secret} > leak.txt 2>&1; true"
    api.script(Reply(tool_calls=(ToolUse("bash", {"command": command}),)), Reply(text="done"))
    # The attacker's recording: made unconfined, so its bash call read the secret.
    live = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", "--no-sandbox")
    assert live.returncode == 0, live.stderr
    recorded = project / "cassettes" / "coding" / "fix-add.tape"
    (session,) = TapeReader(recorded).sessions()
    snapshot = {f.path: f.data for f in fold(session.events).workspace}
    assert snapshot["leak.txt"] == secret.read_bytes()
    assert snapshot["check.py"] == CHECK.encode()
    tape = tmp_path / "x.tape"
    plant_evil(recorded, tape, EVIL.format(out=str(outside), port=listener.port))
    recorded.unlink()

    rescore = evaltape(project, "rescore", str(tape))
    assert rescore.returncode == 0, rescore.stderr
    (attempt,) = record_of(project, rescore)
    assert attempt["verdict"] is Verdict.FAILED
    assert attempt["reason"] == (
        "verify exited 1: RuntimeError: contained: socket ConnectionRefusedError, keys []"
    )
    assert not outside.exists() and listener.accepted == 0

    shutil.copy(tape, project / "cassettes" / "coding" / "fix-add.tape")
    replay = evaltape(project, "replay")
    (attempt,) = record_of(project, replay)
    assert attempt["rescored"] is Verdict.FAILED  # the evil snapshot, contained
    assert not outside.exists() and listener.accepted == 0
    replayed = project / ".evaltape" / "results" / str(attempt["tape"])
    (again,) = TapeReader(replayed).sessions()
    leaked = {f.path: f.data for f in fold(again.events).workspace}["leak.txt"]
    assert b"launch code" not in leaked and b"No such file or directory" in leaked
    assert b"launch code" not in replayed.read_bytes()

    # Unconfined, the same tape escapes: it writes outside, connects, sees the key, passes.
    unconfined = evaltape(project, "rescore", "--no-sandbox", str(tape))
    assert unconfined.returncode == 0, unconfined.stderr
    assert unconfined.stderr.count("sandbox off") == 1
    (attempt,) = record_of(project, unconfined)
    assert attempt["verdict"] is Verdict.PASSED
    assert outside.read_text() == "pwned" and listener.accepted == 1


def test_without_bubblewrap_the_run_is_refused_unless_the_user_opts_out(
    tmp_path: Path, api: FakeAPI
) -> None:
    project = make_project(tmp_path, api.openai_url)
    api.script(Reply(text="done"))
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("sh", "bash", "python", "python3", "git", "cat", "true"):
        found = shutil.which(name)
        if found is not None:
            (tools / name).symlink_to(found)
    no_bwrap = {"PATH": str(tools)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env.update(PYTHONPATH=os.pathsep.join([str(AGENTS), str(REPO)]), **no_bwrap)
        env["OPENAI_API_KEY"] = PLANTED
        return subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = run("live", "-m", "fake-1")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "evaltape: error: no sandbox: bubblewrap (bwrap) is not installed or not on PATH; "
        "install bubblewrap, or pass --no-sandbox (config: sandbox = false) to run verify "
        "commands and tools unconfined"
    ]
    assert api.requests == [] and not (project / "cassettes").exists()

    allowed = run("live", "--no-sandbox", "--update-cassettes", "-m", "fake-1")
    assert allowed.returncode == 0, allowed.stderr
    warnings = [x for x in allowed.stderr.splitlines() if "sandbox" in x]
    assert warnings == [
        "evaltape: warning: sandbox off (bubblewrap (bwrap) is not on PATH; --no-sandbox / "
        "sandbox = false): verify commands and the agent's bash tool run unconfined"
    ]
    (project / "evaltape.toml").write_text(
        (project / "evaltape.toml").read_text() + "sandbox = false\n"
    )
    rescored = run("rescore")
    assert rescored.returncode == 0, rescored.stderr
    assert sum("sandbox off" in x for x in rescored.stderr.splitlines()) == 1
    reported = run("report", "-o", str(tmp_path / "report.html"))
    assert reported.returncode == 0, reported.stderr
    assert sum("sandbox off" in x for x in reported.stderr.splitlines()) == 1
    (project / "evaltape.toml").write_text(
        (project / "evaltape.toml").read_text().replace("sandbox = false\n", "")
    )
    refused_report = run("report", "-o", str(tmp_path / "refused.html"))
    assert refused_report.returncode == 2
    assert refused_report.stderr.strip().splitlines() == [
        "evaltape: error: no sandbox: bubblewrap (bwrap) is not installed or not on PATH; "
        "install bubblewrap, or pass --no-sandbox (config: sandbox = false) to run verify "
        "commands and tools unconfined"
    ]
    assert not (tmp_path / "refused.html").exists()
