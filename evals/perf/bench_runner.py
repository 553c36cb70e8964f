"""Benchmark: does the runner's pool keep ``--concurrency`` attempts in flight?

2 models x 20 cases x 3 trials = 120 live attempts of a Python agent (one
chat completion through ``task.client``, recorded to a tape per case) against
a local OpenAI-compatible server that answers every request after 200 ms.
At ``--concurrency 16`` the ideal is ``ceil(120 / 16) x 200 ms = 1.6 s``; the
target is to finish within 1.3x of that.  Two timings:

- **pool**: ``run_pool`` in this process (what the runner itself adds);
- **command**: ``evaltape live --compare m1,m2 --trials 3 --concurrency 16``
  as a subprocess, start-up and run record included.

Appends or refreshes the "Runner concurrency" section of docs/performance.md.

    python evals/perf/bench_runner.py              # measure and update the doc
    python evals/perf/bench_runner.py --no-doc     # print the section only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evaltape.recorder import Source  # noqa: E402
from evaltape.scoring import Task, load_suites, read_record, resolve_run  # noqa: E402
from evaltape.scoring.checks._score import completed_without_error  # noqa: E402
from evaltape.scoring.run._jobs import (  # noqa: E402
    JobEnv,
    LiveWire,
)
from evaltape.scoring.run._plan import plan_live  # noqa: E402
from evaltape.scoring.run._stop import Stop  # noqa: E402
from evaltape.scoring.run.attempt._agents import parse_agent  # noqa: E402
from evaltape.scoring.run.executors._pool import run_pool  # noqa: E402

SECTION = "## Runner concurrency"
DOC = ROOT / "docs" / "performance.md"


def agent(task: Task) -> str:
    """One chat completion, as the simplest real agent would make it."""
    body = {"model": task.model, "messages": [{"role": "user", "content": task.prompt}]}
    response = task.client.post(task.base_url + "/chat/completions", json=body)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"])


class SlowServer:
    """Answers every chat completion after ``latency`` seconds, on 127.0.0.1."""

    def __init__(self, latency: float) -> None:
        owner = self
        self.latency = latency
        self.count = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave as separate writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with owner.lock:
                    owner.count += 1
                time.sleep(owner.latency)
                reply = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "ok"},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ServerProcess:
    """``SlowServer`` in a child process, so its CPU does not compete with the runner's."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(latency)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the server did not start: {self.url!r}")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def serve(latency: float) -> int:
    """Run ``SlowServer`` until terminated, printing its URL first."""
    server = SlowServer(latency)
    print(server.url, flush=True)
    threading.Event().wait()
    return 0


def write_project(folder: Path, cases: int, url: str) -> None:
    (folder / "evals").mkdir(parents=True)
    lines = [
        json.dumps(
            {
                "id": f"case-{n:02d}",
                "prompt": f"question {n}",
                "failureCategory": "bench",
                "whyModelBacked": "benchmark",
                "expectMaxTurns": 1,
            }
        )
        for n in range(cases)
    ]
    (folder / "evals" / "bench.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "evaltape.toml").write_text(
        f'agent = "evals.perf.bench_runner:agent"\nbase_url = "{url}"\n'
    )


def time_pool(folder: Path, url: str, models: int, trials: int, concurrency: int) -> float:
    suites = load_suites([folder / "evals"], rubrics_dir=folder / "rubrics")
    names = [f"m{n + 1}" for n in range(models)]
    jobs = plan_live(suites, names, trials, folder / "pool-cassettes", "bench")
    env = JobEnv(
        spec=parse_agent("evals.perf.bench_runner:agent"),
        agent=agent,
        scorer=completed_without_error,
        stop=Stop(),
        wall_clock=time.time,
        environ=dict(os.environ),
        base_url=url,
        live=LiveWire(network=httpx.HTTPTransport(), source=Source.SIMULATED),
    )
    started = time.monotonic()
    outcome = run_pool(jobs, env, concurrency=concurrency)
    elapsed = time.monotonic() - started
    passed = sum(r.verdict.value == "passed" for r in outcome.results)
    if passed != len(jobs):
        raise SystemExit(f"only {passed}/{len(jobs)} attempts passed")
    return elapsed


def time_command(folder: Path, models: int, trials: int, concurrency: int) -> tuple[float, float]:
    """Wall time of the subprocess, and the run's own span from its run record."""
    names = ",".join(f"m{n + 1}" for n in range(models))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    argv = [sys.executable, "-m", "evaltape.scoring.cli", "live", "--compare", names]
    argv += ["--trials", str(trials), "--concurrency", str(concurrency)]
    done = subprocess.run(
        argv,
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"evaltape live failed ({done.returncode}):\n{done.stderr}")
    record = read_record(resolve_run(folder / ".evaltape" / "results"))
    assert record.finished_at is not None
    return elapsed, record.finished_at - record.started_at


def render(rows: list[tuple[str, float]], ideal: float, args: argparse.Namespace) -> str:
    jobs = args.models * args.cases * args.trials
    lines = [
        SECTION,
        "",
        f"{args.models} models x {args.cases} cases x {args.trials} trials = {jobs} live attempts "
        f"of a Python agent (one chat completion through `task.client`, recorded to a tape "
        f"per case) against a local server on 127.0.0.1, in its own process, that answers "
        f"each request after "
        f"{args.latency * 1000:.0f} ms, at `--concurrency {args.concurrency}`. The ideal is "
        f"ceil({jobs}/{args.concurrency}) x {args.latency * 1000:.0f} ms = {ideal:.2f} s; "
        "the target is 1.3x of it. *pool* times `run_pool` in-process; *command* runs "
        "`evaltape live --compare m1,m2 --trials 3 --concurrency 16` as a subprocess and "
        "gives the run's span from its run record (validation, planning, the pool, progress "
        "lines, record writes) and the whole process (Python start-up and imports, about "
        "0.3 s here, included).",
        "",
        f"Produced by `python evals/perf/bench_runner.py` (median of {args.reps} runs).",
        "",
        f"Machine: {os.cpu_count()} CPUs; Python {platform.python_version()} on "
        f"{platform.system()} {platform.machine()}.",
        "",
        "| timing | median | / ideal | target (<= 1.3x) |",
        "|---|---:|---:|---|",
    ]
    for name, seconds in rows:
        ratio = seconds / ideal
        lines.append(
            f"| {name} | {seconds:.2f} s | {ratio:.2f}x | {'met' if ratio <= 1.3 else 'missed'} |"
        )
    lines += ["", ""]  # a blank line before the next section
    return "\n".join(lines)


def update_doc(section: str) -> None:
    text = DOC.read_text()
    if SECTION in text:
        start = text.index(SECTION)
        rest = text[start + len(SECTION) :]
        nxt = rest.find("\n## ")
        end = len(text) if nxt < 0 else start + len(SECTION) + nxt + 1
        text = text[:start] + section + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-doc", action="store_true", help="print the section only")
    parser.add_argument("--serve", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    jobs = args.models * args.cases * args.trials
    ideal = math.ceil(jobs / args.concurrency) * args.latency
    server = ServerProcess(args.latency)
    pool: list[float] = []
    command: list[float] = []
    span: list[float] = []
    try:
        for _ in range(args.reps):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                write_project(folder, args.cases, server.url)
                pool.append(
                    time_pool(folder, server.url, args.models, args.trials, args.concurrency)
                )
                whole, run = time_command(folder, args.models, args.trials, args.concurrency)
                command.append(whole)
                span.append(run)
    finally:
        server.close()
    rows = [
        ("pool", statistics.median(pool)),
        ("command: the run (record's started_at to finished_at)", statistics.median(span)),
        ("command: the whole process", statistics.median(command)),
    ]
    section = render(rows, ideal, args)
    print(section)
    if not args.no_doc:
        update_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
