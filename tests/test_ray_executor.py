"""Runs on Ray (``--executor ray``) give what the thread pool gives.

A local Ray instance with 2 workers (``num_cpus=2``, bound to 127.0.0.1, no
dashboard, no usage statistics) is started once for these tests.  Skipped
when ray is not installed (``pip install evaltape[ray]``).
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents.chat_server import ChatServer
from builders import RAY_TESTS, process_gone

from evaltape.recorder import Source, Status, TapeReader
from evaltape.recorder._shared import to_plain
from evaltape.scoring import Attempt, Suite, Verdict, load_config, load_suites
from evaltape.scoring.checks._score import completed_without_error
from evaltape.scoring.checks._scorers import make_scorer
from evaltape.scoring.run._jobs import JobEnv, LiveWire
from evaltape.scoring.run._plan import plan_live
from evaltape.scoring.run._stop import Stop
from evaltape.scoring.run.attempt._agents import load_agent, parse_agent
from evaltape.scoring.run.executors._choose import ray_environment
from evaltape.scoring.run.executors._executor import thread_executor
from evaltape.scoring.run.executors._pool import PoolOutcome, run_pool
from evaltape.scoring.verdicts._replaycheck import find_tapes

pytestmark = RAY_TESTS

ROOT = Path(__file__).parent.parent
AGENTS = Path(__file__).parent / "agents"
TIMING = frozenset({"at", "duration", "steps_us", "started_at", "session_id", "replay_of"})
"""Fields that differ between two runs of the same inputs: clocks (chunk arrival times
included) and fresh ids."""


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """A local Ray instance with 2 workers for every test here; its GCS address."""
    for key, value in ray_environment(None).items():  # read by ray at import
        os.environ.setdefault(key, value)
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    address: str = ray.get_runtime_context().gcs_address
    assert address.startswith("127.0.0.1:")
    yield address
    ray.shutdown()


def _ray(ray_address: str) -> Any:
    from evaltape.scoring.run.executors._ray import ray_executor

    return ray_executor(address=ray_address, project=AGENTS)


def _suites(tmp_path: Path, prompts: dict[str, str]) -> tuple[Suite, ...]:
    lines = [
        json.dumps(
            {
                "id": case_id,
                "prompt": prompt,
                "failureCategory": "runner",
                "whyModelBacked": "ray test",
                "expectMaxTurns": 3,
            }
        )
        for case_id, prompt in prompts.items()
    ]
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return load_suites([path], rubrics_dir=tmp_path / "rubrics")


def _env(
    url: str, agent: str = "chat_agent:run", project: Path = AGENTS, **overrides: object
) -> JobEnv:
    spec = parse_agent(agent)
    options: dict[str, object] = {
        "spec": spec,
        "agent": load_agent(spec, project),
        "scorer": completed_without_error,
        "stop": Stop(),
        "base_url": url,
        "hang_limit": 30.0,
        "wall_clock": time.time,
        "environ": {},
        "live": LiveWire(
            network=httpx.HTTPTransport(), source=Source.SIMULATED, seed=11, retries=0
        ),
    }
    return JobEnv(**(options | overrides))


def _plain(value: Any) -> Any:
    """A decoded event with its timings and fresh ids left out (and the server's date)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list | tuple):
        if len(value) == 2 and isinstance(value[0], str) and value[0].lower() == "date":
            return None
        return [_plain(v) for v in value]
    return value


def _tapes(folder: Path) -> dict[str, list[Any]]:
    """Every tape under ``folder``: its sessions (by case, model, attempt), decoded."""
    out: dict[str, list[Any]] = {}
    for tape in find_tapes(folder):
        sessions = sorted(
            TapeReader(tape).sessions(),
            key=lambda s: (s.header.case_id, s.header.model, s.header.attempt),
        )
        out[tape.relative_to(folder).as_posix()] = [
            [_plain(to_plain(e)) for e in s.events] for s in sessions
        ]
    return out


def _scores(outcome: PoolOutcome) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.case.id,
            r.model,
            r.attempt,
            r.verdict,
            r.reason,
            r.score.passed,
            r.usage,
            r.status,
        )
        for r in outcome.results
    )


def test_a_live_run_on_ray_writes_the_tapes_and_scores_threads_write(
    tmp_path: Path, ray_address: str
) -> None:
    suites = _suites(tmp_path, {f"case-{n}": f"question {n}" for n in range(3)})
    outcomes: dict[str, PoolOutcome] = {}
    with ChatServer() as server:
        for name, executor in (("threads", thread_executor), ("ray", _ray(ray_address))):
            jobs = plan_live(suites, ["m1", "m2"], 2, tmp_path / name, "run-1")
            outcomes[name] = run_pool(jobs, _env(server.url), concurrency=2, executor=executor)
    assert outcomes["ray"].stopped is None and len(outcomes["ray"].results) == 12
    assert all(r.verdict is Verdict.PASSED for r in outcomes["ray"].results)
    assert _scores(outcomes["ray"]) == _scores(outcomes["threads"])
    threads, on_ray = _tapes(tmp_path / "threads"), _tapes(tmp_path / "ray")
    assert len(on_ray) == 3 and sum(len(s) for s in on_ray.values()) == 12
    assert on_ray == threads


def _reasons(result: list[PoolOutcome]) -> str:
    return "; ".join(r.reason for o in result for r in o.results)


def test_killing_a_worker_mid_run_marks_its_attempt_infra_and_the_run_completes(
    tmp_path: Path, ray_address: str
) -> None:
    from evaltape.scoring.run.executors._ray import ray_executor

    shutil.copy(AGENTS / "pid_agent.py", tmp_path / "pid_agent.py")
    pids = tmp_path / "pids"
    pids.mkdir()
    suites = _suites(tmp_path, {f"case-{n}": f"[hold] question {n}" for n in range(3)})
    jobs = plan_live(suites, ["m1"], 1, tmp_path / "results", "run-1")
    executor = ray_executor(address=ray_address, project=tmp_path)
    result: list[PoolOutcome] = []
    with ChatServer(hang=120.0) as server:
        env = _env(server.url, "pid_agent:run", tmp_path, environ={"PID_DIR": str(pids)})
        runner = threading.Thread(
            target=lambda: result.append(run_pool(jobs, env, concurrency=2, executor=executor))
        )
        runner.start()
        # One attempt on each worker, both waiting on the server:
        assert server.wait_holding(2, timeout=180), _reasons(result)
        written = sorted(pids.glob("*.pid"))
        assert len(written) == 2
        victim, pid = written[0].stem, int(written[0].read_text())
        os.kill(pid, signal.SIGKILL)
        for _ in range(500):
            if process_gone(pid):
                break
            time.sleep(0.02)
        server.release()  # the survivor and the third attempt get their answers
        runner.join(300)
    assert result, "the run did not finish"
    outcome = result[0]
    by_case: dict[str, Attempt] = {r.case.id: r for r in outcome.results}
    assert outcome.stopped is None and len(by_case) == 3
    lost = by_case.pop(victim)
    assert (lost.verdict, lost.status, lost.tainted) == (Verdict.ERROR, Status.INFRA_ERROR, True)
    assert "Ray worker" in lost.reason
    assert all(r.verdict is Verdict.PASSED for r in by_case.values())
    written_cases = [
        s.header.case_id for t in find_tapes(tmp_path / "results") for s in TapeReader(t).sessions()
    ]
    assert sorted(written_cases) == sorted(by_case)  # nothing is written for the lost attempt


def _replay(results: Path, *extra: str) -> list[tuple[Any, ...]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaltape.scoring.cli",
            "replay",
            "--results",
            str(results),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **ray_environment(None)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = (results / "runs").glob("*.json")
    attempts = json.loads(record.read_text())["attempts"]
    keys = ("case_id", "model", "attempt", "verdict", "reason", "change", "rescored", "replayed")
    return sorted(tuple(str(a.get(k)) for k in keys) for a in attempts)


def test_replay_of_the_shipped_cassettes_on_ray_gives_the_thread_pools_verdicts(
    tmp_path: Path, ray_address: str
) -> None:
    threads = _replay(tmp_path / "threads")
    on_ray = _replay(tmp_path / "ray", "--executor", "ray", "--ray-address", ray_address)
    assert len(on_ray) == 168
    assert on_ray == threads


@pytest.mark.parametrize("whole", [False, True], ids=["sessions", "whole-tapes"])
def test_rescore_in_batches_on_ray_gives_the_in_process_results_in_order(
    ray_address: str, whole: bool
) -> None:
    from evaltape.scoring.run.executors._ray_rescore import RayRescorer
    from evaltape.scoring.run.rescore._tapes import rescore_on, rescore_tapes
    from evaltape.scoring.run.rescore._whole import WHOLE_TAPE_BYTES

    config = load_config(ROOT)
    suites = load_suites([config.suites], rubrics_dir=config.rubrics)
    cases = {c.id: c for s in suites for c in s.cases}
    tapes = find_tapes(config.cassettes)
    made: list[RayRescorer] = []

    def batched(scorer: Any, floors: Any) -> RayRescorer:
        limit = WHOLE_TAPE_BYTES if whole else 0
        made.append(
            RayRescorer(scorer, floors, address=ray_address, num_cpus=2, batch=7, whole_limit=limit)
        )
        return made[-1]

    options: dict[str, Any] = {
        "cassettes": config.cassettes,
        "results": config.results,
        "scorer": make_scorer(hang_limit=config.hang_limit),
    }
    here = rescore_tapes(tapes, cases, **options)
    there = rescore_on(batched, tapes, cases, **options)
    assert len(there.rescored) == len(here.rescored) > 100
    if whole:  # each tape went as it is, several small ones to a task
        assert made[0].tapes == len(tapes) and 1 < made[0].tasks < len(tapes)
    else:  # batches of 7 sessions, not one task each
        assert made[0].tasks == -(-len(here.rescored) // 7) and made[0].tapes == 0
    assert there == here
