"""A Ray cluster of two raylets on 127.0.0.1, started from a folder that is not the project.

Each raylet has one CPU and its own ``--temp-dir`` (separate node ids), and both
are started in a scratch folder of their own, so a worker finds nothing of the
project where it runs: whatever an attempt needs (rubrics, cases, the agent)
must travel with it.  The driver is ``evaltape`` in a subprocess, as a user runs
it.  Every process of the cluster is found by its temp folder and killed at the
end; Ray's auth token mode is off and ``HOME`` is the scratch folder, so nothing
is written outside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents.chat_server import ChatServer
from builders import RAY_TESTS

pytestmark = RAY_TESTS

ROOT = Path(__file__).parent.parent
AGENTS = Path(__file__).parent / "agents"


class Cluster:
    """Two raylets (head ``a`` and ``b``), one CPU each, in ``scratch``."""

    def __init__(self, scratch: Path, token: str = "") -> None:
        self.scratch = scratch
        self.token = token
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "EVALTAPE_"))},
            "HOME": str(scratch),
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
            "PYTHONPATH": str(ROOT),
        }

    def start(self) -> None:
        ray_cli = str(Path(sys.executable).with_name("ray"))
        common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
        head = [ray_cli, "start", "--head", f"--port={self.port}", "--include-dashboard=false"]
        node = [ray_cli, "start", f"--address={self.address}"]
        env = self.env
        if self.token:  # the cluster wants this token; the driver's env is left without it
            env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}
        for argv, name in ((head, "a"), (node, "b")):
            done = subprocess.run(
                [*argv, *common, f"--temp-dir={self.scratch / name}"],
                cwd=self.scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert done.returncode == 0, done.stderr[-2000:]

    def pids(self, name: str = "") -> list[int]:
        """Processes whose command line names this cluster's temp folder (``name``: one
        raylet's), and their descendants (the workers a raylet started)."""
        mark = str(self.scratch / name)
        parents: dict[int, int] = {}
        found: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(stat[1])
                if mark in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.add(int(entry.name))
        grew = True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in found} - found
            found |= more
            grew = bool(more)
        return sorted(found)

    def kill(self, name: str = "") -> None:
        """SIGKILL every process of this cluster (``name``: of that raylet and its workers):
        a node that dies."""
        for pid in self.pids(name):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _cluster(token: str = "") -> Iterator[Cluster]:
    # A short folder of its own: Ray's socket paths under it must stay within 107 bytes.
    scratch = Path(tempfile.mkdtemp(prefix="evr", dir="/tmp"))
    made = Cluster(scratch, token)
    try:
        made.start()
        yield made
    finally:
        made.kill()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with _cluster() as made:
        yield made


def _evaltape(
    cluster: Cluster, cwd: Path, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=cwd,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _verdicts(found: dict[str, Any]) -> list[tuple[str, ...]]:
    keys = ("case_id", "model", "attempt", "verdict", "reason", "change", "rescored", "replayed")
    return sorted(tuple(str(a.get(k)) for k in keys) for a in found["record"]["attempts"])


def test_the_main_job_on_two_raylets_gives_the_thread_pools_verdicts(
    cluster: Cluster, tmp_path: Path
) -> None:
    on_ray = _evaltape(
        cluster, ROOT, "replay", "--executor", "ray", "--ray-address", cluster.address,
        "--results", str(tmp_path / "ray"), "--json", "-",
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    found = json.loads(on_ray.stdout)  # stdout is the JSON document and nothing else
    threads = _evaltape(
        cluster, ROOT, "replay", "--executor", "threads",
        "--results", str(tmp_path / "threads"), "--json", "-",
    )  # fmt: skip
    assert threads.returncode == 0, threads.stderr[-3000:]
    expected = json.loads(threads.stdout)
    assert len(found["record"]["attempts"]) == 168
    judged = [a for a in found["record"]["attempts"] if a.get("judge_score") is not None]
    assert judged, "judged attempts were replayed and graded from the tape"
    assert _verdicts(found) == _verdicts(expected)
    assert found["counts"] == expected["counts"]


def _project(root: Path, base_url: str) -> Path:
    project = root / "project"
    (project / "evals").mkdir(parents=True)
    shutil.copy(AGENTS / "chat_agent.py", project / "held_agent.py")
    case = {"failureCategory": "runner", "whyModelBacked": "ray", "expectMaxTurns": 3}
    lines = [json.dumps({**case, "id": f"held-{n}", "prompt": f"[hold] q{n}"}) for n in range(2)]
    (project / "evals" / "held.jsonl").write_text("\n".join(lines) + "\n")
    (project / "evaltape.toml").write_text(
        f'agent = "held_agent:run"\nbase_url = "{base_url}"\nconcurrency = 2\n'
    )
    return project


def test_a_killed_raylet_is_a_counted_error_and_the_json_stays_json(
    cluster: Cluster, tmp_path: Path
) -> None:
    with ChatServer(hang=300.0) as server:
        project = _project(tmp_path, server.url)
        done: list[subprocess.CompletedProcess[str]] = []
        argv = ("live", "-m", "m1", "--executor", "ray", "--ray-address", cluster.address,
                "--json", "-")  # fmt: skip
        runner = threading.Thread(target=lambda: done.append(_evaltape(cluster, project, *argv)))
        runner.start()
        # One attempt on each raylet (one CPU each), both waiting for their answer:
        assert server.wait_holding(2, timeout=300)
        cluster.kill("b")
        for _ in range(500):
            if not cluster.pids("b"):
                break
            time.sleep(0.02)
        server.release()
        runner.join(600)
    assert done, "the run did not finish"
    result = done[0]
    found = json.loads(result.stdout)  # Ray's account of the dead node is not on stdout
    attempts = found["record"]["attempts"]
    assert result.returncode != 0, [(a["verdict"], a["reason"]) for a in attempts]
    verdicts = sorted(a["verdict"] for a in found["record"]["attempts"])
    assert verdicts == ["error", "passed"]
    lost = next(a for a in found["record"]["attempts"] if a["verdict"] == "error")
    assert "Ray worker" in lost["reason"] and "\x1b" not in lost["reason"]
    assert found["counts"]["error"] == 1 and found["counts"]["passed"] == 1
    assert "Traceback" not in result.stderr


TOKEN = "0123456789abcdef0123456789abcdef"


def test_a_cluster_that_wants_a_token_says_how_to_give_it_and_works_once_given(
    tmp_path: Path,
) -> None:
    with _cluster(token=TOKEN) as cluster:
        argv = ("replay", "--executor", "ray", "--ray-address", cluster.address,
                "--results", str(tmp_path / "r"), "--cases", "add-json-key")  # fmt: skip
        refused = _evaltape(cluster, ROOT, *argv, timeout=120)
        assert refused.returncode == 2
        (line,) = [x for x in refused.stderr.splitlines() if x.startswith("evaltape:")]
        assert line == (
            f"evaltape: error: --executor ray: cannot join the Ray cluster at {cluster.address}: "
            "the cluster asks for an auth token: set RAY_AUTH_MODE=token (Ray reads the token "
            "from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
        )
        assert refused.stdout == ""
        cluster.env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)  # the fix, as said
        done = _evaltape(cluster, ROOT, *argv, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "OK: " in done.stdout and "harness unchanged" in done.stdout


@pytest.mark.parametrize("command", ["replay", "rescore", "rescore a run"])
def test_an_address_nobody_answers_at_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    """Every command that takes the executor connects: a rescore of a run record too,
    which is scored on the cluster, not quietly in this process."""
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    argv = [command]
    if command == "rescore a run":
        from evaltape.scoring import RunKind, RunRecord, RunState
        from evaltape.scoring.results._record_files import write_record

        record = RunRecord(
            run_id="20261203T000000.000Z-0000ab",
            kind=RunKind.RESCORE,
            state=RunState.COMPLETED,
            started_at=0.0,
        )
        argv = ["rescore", str(write_record(tmp_path, record))]
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *argv, "--executor", "ray",
         "--ray-address", f"127.0.0.1:{port}", "--results", str(tmp_path)],
        cwd=ROOT, env={**env, "HOME": str(tmp_path)}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"evaltape: error: --executor ray: cannot reach the Ray cluster at 127.0.0.1:{port}: "
        "Connection refused"
    ]
    assert done.stdout == ""


WHERE_AGENT = """
import os
from pathlib import Path

import shipped_scorer  # beside this module in the project: must come from the same copy

def run(task):
    (Path(task.environ["WHERE_DIR"]) / f"{task.case_id}.txt").write_text(
        f"{Path(__file__).resolve()}\\n{Path(shipped_scorer.__file__).resolve()}"
    )
    body = {"model": task.model, "messages": [{"role": "user", "content": task.prompt}]}
    response = task.client.post(task.base_url.rstrip("/") + "/chat/completions", json=body)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"])
"""

SCORER = """
from evaltape.scoring import Score

def answered(case, session):
    return Score(passed=bool(session.turns), reason="no model call")
"""


def test_the_project_is_shipped_to_the_workers_with_ray_working_dir(
    cluster: Cluster, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    (project / "where_agent.py").write_text(WHERE_AGENT)
    (project / "shipped_scorer.py").write_text(SCORER)
    case = {"failureCategory": "runner", "whyModelBacked": "ray", "expectMaxTurns": 3}
    lines = [json.dumps({**case, "id": f"c{n}", "prompt": f"q{n}"}) for n in range(2)]
    (project / "evals" / "s.jsonl").write_text("\n".join(lines) + "\n")
    where = tmp_path / "where"
    where.mkdir()
    with ChatServer() as server:
        (project / "evaltape.toml").write_text(
            f'agent = "where_agent:run"\nbase_url = "{server.url}"\n'
            'scorers = "shipped_scorer:answered"\n'
        )
        cluster.env["WHERE_DIR"] = str(where)
        done = _evaltape(
            cluster, project, "live", "-m", "m1", "--executor", "ray",
            "--ray-address", cluster.address, "--ray-working-dir", ".", "--json", "-",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    attempts = found["record"]["attempts"]
    assert [a["verdict"] for a in attempts] == ["passed", "passed"], [a["reason"] for a in attempts]
    for seen in sorted(where.glob("*.txt")):
        agent, scorer = seen.read_text().splitlines()
        # imported from the workers' copy of the project, not from the project itself
        assert not agent.startswith(str(project.resolve())), agent
        assert Path(agent).parent == Path(scorer).parent
    assert len(list(where.glob("*.txt"))) == 2
