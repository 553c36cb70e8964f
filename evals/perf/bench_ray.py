"""Benchmark: threads against a local 2-worker Ray instance, side by side in one run.

Three measures, each run with the thread pool (this process) and with the Ray
executor on a local Ray instance of 2 workers (``num_cpus=2``, 127.0.0.1):

- rescore of ``--sessions`` (10,000) generated 25-turn sessions (``traffic.py``,
  as ``bench_rescore.py`` writes them), sent to Ray in batches of ``BATCH``;
- replay of a ``--cases`` x 3 (300-attempt) synthetic suite: a one-call
  Python agent recorded live against a 127.0.0.1 server, then replayed;
- the per-task overhead: a Ray task that does nothing, and the replay's
  extra time per attempt.

Replaces the "Scaling out with Ray" section of docs/performance.md.

    python evals/perf/bench_ray.py               # measure and update the doc
    python evals/perf/bench_ray.py --sessions 1000 --cases 20 --no-doc
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.bench_rescore import make_case, write_tapes  # noqa: E402
from evals.perf.bench_runner import SlowServer, agent, write_project  # noqa: E402
from evaltape.recorder import Source, TapeReader  # noqa: E402
from evaltape.scoring import load_suites, make_scorer, rescore_tapes  # noqa: E402
from evaltape.scoring.checks._score import completed_without_error  # noqa: E402
from evaltape.scoring.run._jobs import JobEnv, LiveWire  # noqa: E402
from evaltape.scoring.run._plan import plan_live, plan_replay  # noqa: E402
from evaltape.scoring.run._stop import Stop  # noqa: E402
from evaltape.scoring.run.attempt._agents import parse_agent  # noqa: E402
from evaltape.scoring.run.executors._choose import ray_environment  # noqa: E402
from evaltape.scoring.run.executors._executor import thread_executor  # noqa: E402
from evaltape.scoring.run.executors._pool import run_pool  # noqa: E402

HEADING = "## Scaling out with Ray"
DOC = ROOT / "docs" / "performance.md"
WORKERS = 2
TRIALS = 3
CONCURRENCY = 4


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = work()
    return time.perf_counter() - started, value


def rescore_rows(folder: Path, sessions: int, address: str) -> dict[str, float]:
    from evaltape.scoring.run.executors._ray_rescore import BATCH, RayRescorer

    written, tapes = timed(lambda: write_tapes(folder / "cassettes", sessions))
    cases = {c.id: c for c in (make_case(i) for i in range(20))}
    options: dict[str, Any] = {
        "cassettes": folder / "cassettes",
        "results": folder / "results",
        "scorer": make_scorer(),
    }
    made: list[RayRescorer] = []

    def rescorer(scorer: Any, floors: Any) -> RayRescorer:
        made.append(RayRescorer(scorer, floors, address=address, num_cpus=WORKERS))
        return made[-1]

    here_s, here = timed(lambda: rescore_tapes(tapes, cases, **options))
    ray_s, there = timed(lambda: rescore_tapes(tapes, cases, rescorer=rescorer, **options))
    if there != here:
        raise SystemExit("rescore on Ray differs from rescore in this process")
    one = [tapes[0]]  # the driver's share: reading one tape, nothing scored
    read_s, _ = timed(lambda: sum(1 for _ in TapeReader(one[0], strict=False).sessions()))
    per_tape = sessions / len(tapes)
    return {
        "sessions": len(here.rescored),
        "write_s": written,
        "threads_s": here_s,
        "ray_s": ray_s,
        "tasks": made[0].tasks,
        "batch": BATCH,
        "read_ms": read_s / per_tape * 1000,
    }


def _env(url: str) -> JobEnv:
    return JobEnv(
        spec=parse_agent("evals.perf.bench_runner:agent"),
        agent=agent,
        scorer=completed_without_error,
        stop=Stop(),
        wall_clock=time.time,
        environ=dict(os.environ),
        base_url=url,
        live=LiveWire(network=httpx.HTTPTransport(), source=Source.SIMULATED),
    )


def replay_rows(folder: Path, cases: int, address: str) -> dict[str, float]:
    from evaltape.scoring.run.executors._ray import ray_executor

    server = SlowServer(0.0)
    try:
        write_project(folder, cases, server.url)
        suites = load_suites([folder / "evals"], rubrics_dir=folder / "rubrics")
        live = plan_live(suites, ["m1"], TRIALS, folder / "recorded", "live")
        recorded = run_pool(live, _env(server.url), concurrency=CONCURRENCY)
    finally:
        server.close()
    by_id = {c.id: c for s in suites for c in s.cases}
    sessions = [
        (by_id[s.header.case_id], s)
        for tape in sorted((folder / "recorded").rglob("*.tape"))
        for s in TapeReader(tape).sessions()
    ]
    rows: dict[str, float] = {"attempts": len(sessions), "recorded": len(recorded.results)}
    executors = (("threads", thread_executor), ("ray", ray_executor(address=address, project=ROOT)))
    verdicts = {}
    for name, executor in executors:
        jobs = plan_replay(sessions, folder / name, "replay")
        seconds, outcome = timed(
            lambda jobs=jobs, executor=executor: run_pool(
                jobs, _env("http://127.0.0.1:9/v1"), concurrency=CONCURRENCY, executor=executor
            )
        )
        rows[f"{name}_s"] = seconds
        verdicts[name] = sorted(
            (r.job.case.id, r.job.attempt, r.verdict.value) for r in outcome.results
        )
    if verdicts["ray"] != verdicts["threads"] or len(verdicts["ray"]) != len(sessions):
        raise SystemExit("replay on Ray gave other verdicts than the thread pool")
    return rows


def task_overhead(tasks: int = 200) -> float:
    """Milliseconds per Ray task that does nothing (submitted at once, results gathered)."""
    import ray

    noop = ray.remote(num_cpus=1)(lambda: None)
    ray.get([noop.remote() for _ in range(WORKERS * 2)])  # warm the workers
    seconds, _ = timed(lambda: ray.get([noop.remote() for _ in range(tasks)]))
    return seconds / tasks * 1000


def section(args: argparse.Namespace) -> str:
    for key, value in ray_environment(None).items():
        os.environ.setdefault(key, value)
    import ray

    load = os.getloadavg()
    start_s, _ = timed(
        lambda: ray.init(
            num_cpus=WORKERS, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
        )
    )
    address = ray.get_runtime_context().gcs_address
    try:
        overhead_ms = task_overhead()
        with tempfile.TemporaryDirectory() as tmp:
            replay = replay_rows(Path(tmp) / "replay", args.cases, address)
        with tempfile.TemporaryDirectory() as tmp:
            rescore = rescore_rows(Path(tmp), args.sessions, address)
    finally:
        ray.shutdown()
    load_after = os.getloadavg()
    r_ratio = rescore["threads_s"] / rescore["ray_s"]
    p_ratio = replay["threads_s"] / replay["ray_s"]
    extra_ms = (replay["ray_s"] - replay["threads_s"]) / replay["attempts"] * 1000
    per_session_ms = rescore["threads_s"] / rescore["sessions"] * 1000
    rescore_row = (
        f"| rescore {rescore['sessions']:,} 25-turn sessions ({rescore['tasks']} tasks of "
        f"{rescore['batch']}) | {rescore['threads_s']:.1f} s | {rescore['ray_s']:.1f} s "
        f"| **{r_ratio:.2f}x** |"
    )
    replay_row = (
        f"| replay {replay['attempts']:,} attempts (concurrency {CONCURRENCY}) "
        f"| {replay['threads_s']:.1f} s | {replay['ray_s']:.1f} s | **{p_ratio:.2f}x** |"
    )
    return f"""{HEADING}

The same work with the thread pool (`--executor threads`, this process) and
with `--executor ray` on a local Ray instance of {WORKERS} workers
(`num_cpus={WORKERS}`, 127.0.0.1), side by side in one run.  Ratios are thread
time / Ray time: above 1, Ray is faster.  Verdicts (and rescore results) are
checked to be identical before a figure is reported.

```sh
python evals/perf/bench_ray.py --sessions {args.sessions} --cases {args.cases}
```

Machine: {machine()}; ray {ray.__version__}.  The machine is shared and busy
(load average {load[0]:.1f} when the run started, {load_after[0]:.1f} when it
ended, on 2 cores), so the absolute seconds are inflated and vary from run to
run; the ratios, measured back to back, are the figures to read.

| measure | threads | Ray, {WORKERS} workers | ratio |
|---|---:|---:|---:|
{rescore_row}
{replay_row}

| overhead | value |
|---|---:|
| starting the local Ray instance | {start_s:.1f} s |
| one Ray task that does nothing ({WORKERS} workers, 200 at once) | {overhead_ms:.1f} ms |
| replay: extra time per attempt on Ray | {extra_ms:+.1f} ms |
| rescore: one session in this process (read, fold, score) | {per_session_ms:.1f} ms |
| rescore: the driver's share of one session (reading it) | {rescore["read_ms"]:.1f} ms |

(The {rescore["sessions"]:,} sessions' tapes took {rescore["write_s"]:.0f} s to write; that
is not part of either figure.)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions to rescore")
    parser.add_argument("--cases", type=int, default=100, help="cases in the replayed suite")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    text = section(args)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
