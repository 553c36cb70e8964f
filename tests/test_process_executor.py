"""Attempts on every core: the process executor gives what threads give, and loses nothing.

The main job (the shipped cassettes, 168 attempts) is replayed with threads and
with the default executor, which runs a replay that large in one process per
core; the verdicts must be the same.  A pool process killed mid-attempt is a
counted infrastructure error, and the run completes; an agent the processes
cannot import is every attempt's error, named plainly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from agents.chat_server import ChatServer
from builders import process_gone

from evaltape.recorder import Source, Status, TapeReader
from evaltape.scoring import Attempt, Suite, Verdict, load_suites
from evaltape.scoring.checks._score import completed_without_error
from evaltape.scoring.run._jobs import JobEnv, LiveWire
from evaltape.scoring.run._plan import plan_live
from evaltape.scoring.run._stop import Stop
from evaltape.scoring.run.attempt._agents import load_agent, parse_agent
from evaltape.scoring.run.executors._choose import PROCESS_REPLAYS
from evaltape.scoring.run.executors._executor import cores
from evaltape.scoring.run.executors._pool import PoolOutcome, run_pool
from evaltape.scoring.run.executors._processes import process_executor
from evaltape.scoring.verdicts._replaycheck import find_tapes

REPO = Path(__file__).parent.parent
AGENTS = Path(__file__).parent / "agents"
pytestmark = pytest.mark.slow


def _suites(tmp_path: Path, prompts: dict[str, str]) -> tuple[Suite, ...]:
    case = {"failureCategory": "runner", "whyModelBacked": "test", "expectMaxTurns": 3}
    lines = [json.dumps({**case, "id": k, "prompt": v}) for k, v in prompts.items()]
    (tmp_path / "suite.jsonl").write_text("\n".join(lines) + "\n")
    return load_suites([tmp_path / "suite.jsonl"], rubrics_dir=tmp_path)


def _env(url: str, agent: str, project: Path, environ: dict[str, str]) -> JobEnv:
    spec = parse_agent(agent)
    return JobEnv(
        spec=spec,
        agent=load_agent(spec, project),
        scorer=completed_without_error,
        stop=Stop(),
        base_url=url,
        hang_limit=60.0,
        wall_clock=time.time,
        environ=environ,
        live=LiveWire(network=httpx.HTTPTransport(), source=Source.SIMULATED, retries=0),
    )


def test_a_killed_process_is_a_counted_error_and_the_run_completes(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "pid_agent.py", tmp_path / "pid_agent.py")
    pids = tmp_path / "pids"
    pids.mkdir()
    suites = _suites(tmp_path, {f"case-{n}": f"[hold] question {n}" for n in range(3)})
    jobs = plan_live(suites, ["m1"], 1, tmp_path / "results", "run-1")
    result: list[PoolOutcome] = []
    with ChatServer(hang=120.0) as server:
        env = _env(server.url, "pid_agent:run", tmp_path, {"PID_DIR": str(pids)})
        executor = process_executor(processes=2, project=tmp_path)
        runner = threading.Thread(
            target=lambda: result.append(run_pool(jobs, env, concurrency=2, executor=executor))
        )
        runner.start()
        assert server.wait_holding(2, timeout=180)  # one attempt in each process, held
        written = sorted(pids.glob("*.pid"))
        assert len(written) == 2 and written[0].read_text() != written[1].read_text()
        victim, pid = written[0].stem, int(written[0].read_text())
        assert pid != os.getpid()
        os.kill(pid, signal.SIGKILL)
        for _ in range(500):
            if process_gone(pid):
                break
            time.sleep(0.02)
        server.release()
        runner.join(300)
    assert result, "the run did not finish"
    by_case: dict[str, Attempt] = {r.case.id: r for r in result[0].results}
    assert result[0].stopped is None and len(by_case) == 3
    lost = by_case.pop(victim)
    assert (lost.verdict, lost.status, lost.tainted) == (Verdict.ERROR, Status.INFRA_ERROR, True)
    assert "the process running it died" in lost.reason
    assert all(r.verdict is Verdict.PASSED for r in by_case.values())
    written_cases = [
        s.header.case_id for t in find_tapes(tmp_path / "results") for s in TapeReader(t).sessions()
    ]
    assert sorted(written_cases) == sorted(by_case)


def test_an_agent_the_processes_cannot_import_is_each_attempts_error(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "pid_agent.py", tmp_path / "gone_agent.py")
    suites = _suites(tmp_path, {"a": "q a", "b": "q b"})
    jobs = plan_live(suites, ["m1"], 1, tmp_path / "results", "run-1")
    with ChatServer() as server:
        env = _env(server.url, "gone_agent:run", tmp_path, {})
        (tmp_path / "gone_agent.py").unlink()  # imported here; the processes cannot
        outcome = run_pool(
            jobs, env, concurrency=2, executor=process_executor(processes=2, project=tmp_path)
        )
    assert len(outcome.results) == 2
    for r in outcome.results:
        assert r.verdict is Verdict.ERROR and "gone_agent" in r.reason, r.reason
        assert "\n" not in r.reason


def _replay(executor: str, results: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "replay", "--executor", executor,
         "--results", str(results), "--json", "-"],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_the_main_job_on_every_core_gives_the_verdicts_threads_give(tmp_path: Path) -> None:
    if cores() < 2:
        pytest.skip("one core: auto replays in threads, there is no process pool to compare")
    assert len(find_tapes(REPO / "cassettes")) and PROCESS_REPLAYS <= 168
    keys = ("case_id", "model", "attempt", "verdict", "reason", "change", "rescored", "replayed")

    def verdicts(found: dict[str, Any]) -> list[tuple[str, ...]]:
        return sorted(tuple(str(a.get(k)) for k in keys) for a in found["record"]["attempts"])

    threads = _replay("threads", tmp_path / "threads")
    pooled = _replay("auto", tmp_path / "auto")
    assert len(pooled["record"]["attempts"]) == 168
    assert verdicts(pooled) == verdicts(threads)
    assert pooled["counts"] == threads["counts"]


def test_a_run_whose_environment_cannot_travel_runs_in_threads(tmp_path: Path) -> None:
    from evaltape.scoring.run.executors._executor import Guard, ThreadExecutor

    shutil.copy(AGENTS / "pid_agent.py", tmp_path / "pid_agent.py")
    env = _env("http://127.0.0.1:9/v1", "pid_agent:run", tmp_path, {})
    env = attrs.evolve(env, wall_clock=lambda: 0.0)  # pickle cannot carry a lambda
    made = process_executor(processes=2, project=tmp_path)(env, 2, Guard(env=env))
    assert isinstance(made, ThreadExecutor)
    made.close(wait=True)
