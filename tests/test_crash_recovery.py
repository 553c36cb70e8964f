"""SIGKILL of ``evaltape live`` loses nothing the model answered: a real driver in a
subprocess, agents looping against a 127.0.0.1 server that counts the responses it
finished sending, then ``status`` (crashed), ``recover`` and ``rescore``.

The server holds every request after the first ``HOLD_AFTER`` answers, so when the
four long attempts are all held nothing else can be answered; the test then waits one
second (the guarantee under test: an exchange answered a second before the kill is on
disk) and kills the driver's whole process group."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.loop_server import LoopServer
from test_export_langfuse import PUBLIC, SECRET, FakeLangfuse, attrs_of

from evaltape.recorder import Exchange, SessionEnded, Status, TapeReader
from evaltape.scoring import RunState, Verdict, read_history, read_record, resolve_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
CALLS = 40
"""Model calls each long attempt makes."""
HOLD_AFTER = 50
"""Responses the server sends before it holds every later request."""

AGENT = '''"""Calls the model until it says done (at most 60 times)."""

from evaltape.scoring import Task


def run(task: Task) -> str:
    url = task.base_url.rstrip("/") + "/chat/completions"
    messages = [{"role": "user", "content": f"{task.prompt} #{task.attempt}"}]
    for _ in range(60):
        response = task.client.post(url, json={"model": task.model, "messages": messages})
        response.raise_for_status()
        content = response.json()["choices"][0]["message"]["content"]
        if content == "done":
            return content
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": "go on"})
    return "gave up"
'''


def _case(case_id: str, prompt: str) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "exercises the runner against a fake model",
            "expectMaxTurns": 60,
        }
    )


def _project(root: Path, base_url: str, executor: str) -> Path:
    project = root / "project"
    (project / "evals").mkdir(parents=True)
    (project / "looper.py").write_text(AGENT)
    cases = [_case("quick", "[quick] hello"), _case("long-a", "long a"), _case("long-b", "long b")]
    (project / "evals" / "basic.jsonl").write_text("\n".join(cases) + "\n")
    (project / "evaltape.toml").write_text(
        f'agent = "looper:run"\nbase_url = "{base_url}"\nconcurrency = 4\nexecutor = "{executor}"\n'
    )
    return project


def _env(scratch: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_", "RAY_"))
    }
    env.update(
        PYTHONPATH=str(REPO),
        OPENAI_API_KEY="sk-test-0123456789abcdefghijklmnop",
        TMPDIR=str(scratch),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _evaltape(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _answered(folder: Path, pattern: str) -> Counter[tuple[str, int]]:
    """(first user message, turn) of every exchange readable from the files under
    ``folder`` matching ``pattern``, through the public reader."""
    seen: Counter[tuple[str, int]] = Counter()
    for path in sorted(folder.rglob(pattern)):
        for session in TapeReader(path, strict=False).sessions():
            for event in session.events:
                if isinstance(event, Exchange) and event.response is not None:
                    body = json.loads(event.request.body)
                    messages = body["messages"]
                    prompt = next(m["content"] for m in messages if m["role"] == "user")
                    turn = sum(1 for m in messages if m["role"] == "assistant")
                    seen[(prompt, turn)] += 1
    return seen


def _missing(want: Counter[tuple[str, int]], got: Counter[tuple[str, int]]) -> list[object]:
    return sorted((key, n - got[key]) for key, n in want.items() if got[key] < n)


@pytest.fixture
def group() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes the test starts in their own session; whatever is left of each one's
    process group (its Ray instance, say) is killed at the end."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


EXECUTORS = [
    "threads",
    pytest.param("ray", marks=pytest.mark.ray),
]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_killed_driver_loses_no_answered_exchange_and_recover_closes_the_run(
    tmp_path: Path, executor: str, group: list[subprocess.Popen[str]]
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = _env(scratch)
    if executor == "ray":
        pytest.importorskip("ray")
        # Ray's own files where Ray keeps them by default (as tests/test_ray_executor.py's
        # instance does): its socket paths under tmp_path would pass the 107-byte limit.
        env["RAY_TMPDIR"] = "/tmp"
    with LoopServer(calls=CALLS, hold_after=HOLD_AFTER, quick=2) as server:
        project = _project(tmp_path, server.url, executor)
        driver = subprocess.Popen(
            [sys.executable, "-m", "evaltape.scoring.cli", "live", "-m", "fake-1",
             "--trials", "2"],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )  # fmt: skip
        group.append(driver)
        assert server.reached.wait(240), "the driver never got HOLD_AFTER answers"
        assert server.wait_holding(4), "four long attempts are in flight, each one held"
        answered = Counter(server.finished)
        assert len(answered) >= HOLD_AFTER
        quick = [key for key in answered if key[0].startswith("[quick]")]
        assert len(quick) == 2  # both quick attempts were answered first
        driver_alive = driver.poll() is None
        time.sleep(1.0)  # the guarantee under test: answered a second ago, on disk
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    assert driver_alive

    results = project / ".evaltape" / "results"
    record = read_record(resolve_run(results))
    tapes = results / "tapes" / record.run_id
    before = _answered(tapes, "*.tape") + _answered(tapes, "*.journal")
    assert not _missing(answered, before), "answered exchanges lost by the kill"
    assert record.state is RunState.RUNNING and record.pid == driver.pid
    finished = {(a.case_id, a.attempt) for a in record.attempts}
    assert finished == {("quick", 0), ("quick", 1)}  # every finished attempt is recorded
    assert all(a.verdict is Verdict.PASSED for a in record.attempts)
    assert record.workspaces and Path(record.workspaces).is_dir()
    left_behind = sorted(p.name for p in Path(record.workspaces).iterdir())
    assert len(left_behind) == 4, left_behind

    status = _evaltape(project, env, "status", "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["state"] == "crashed" and f"pid {driver.pid}" in shown["crashed"]
    assert shown["recover"] == f"evaltape recover {record.run_id}"
    text = _evaltape(project, env, "status")
    assert f"recover   evaltape recover {record.run_id}" in text.stdout

    (scratch / "someone-else").mkdir()  # not the run's: recover leaves it alone
    done = _evaltape(project, env, "recover", record.run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "workspaces removed: 4" in done.stdout
    assert sorted(p.name for p in scratch.iterdir()) == ["someone-else"]
    assert not list(tapes.rglob("*.journal"))

    closed = read_record(resolve_run(results, record.run_id))
    assert closed.state is RunState.CRASHED and closed.finished_at is not None
    interrupted = [a for a in closed.attempts if a.verdict is Verdict.INTERRUPTED]
    assert sorted((a.case_id, a.attempt) for a in interrupted) == [
        ("long-a", 0), ("long-a", 1), ("long-b", 0), ("long-b", 1),
    ]  # fmt: skip
    assert all("recovered after a crash" in a.reason for a in interrupted)
    (entry,) = read_history(results)
    assert entry.run_id == record.run_id and entry.state is RunState.CRASHED
    assert [(m.passed, m.total) for m in entry.models] == [(2, 2)]  # interrupted: not counted

    after = _answered(tapes, "*.tape")
    assert not _missing(answered, after), "answered exchanges lost by recover"
    for path in tapes.rglob("*.tape"):
        for session in TapeReader(path).sessions():
            end = session.events[-1]
            assert isinstance(end, SessionEnded)
            if session.header.case_id != "quick":
                assert end.status is Status.INTERRUPTED
                assert end.reason.startswith("recovered after a crash")

    again = _evaltape(project, env, "recover", record.run_id)
    assert again.returncode == 2 and "nothing to recover" in again.stderr

    rescored = _evaltape(project, env, "rescore", record.run_id)
    assert "Traceback" not in rescored.stderr, rescored.stderr
    incomplete = [line for line in rescored.stdout.splitlines() if line.startswith("incomplete ")]
    assert len(incomplete) == 4, rescored.stdout
    assert all("interrupted: recovered after a crash" in line for line in incomplete)

    with FakeLangfuse() as langfuse:
        keys = {"LANGFUSE_HOST": langfuse.host, "LANGFUSE_PUBLIC_KEY": PUBLIC}
        exported = _evaltape(
            project, env | keys | {"LANGFUSE_SECRET_KEY": SECRET}, "export", record.run_id
        )
        assert exported.returncode == 0, exported.stdout + exported.stderr
        roots = [attrs_of(s) for s in langfuse.spans]
        roots = [a for a in roots if "evaltape.verdict" in a]
    assert sorted(a["evaltape.verdict"] for a in roots) == ["interrupted"] * 4 + ["passed"] * 2
    assert sum(1 for a in roots if a.get("evaltape.incomplete")) == 4
