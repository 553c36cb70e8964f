"""Benchmark: threads against 2 processes and a local 2-worker Ray instance, in one run.

Three measures, each run with the thread pool (this process) and with the Ray
executor on a local Ray instance of 2 workers (``num_cpus=2``, 127.0.0.1):

- rescore of ``--sessions`` (4,000) generated 25-turn sessions (``traffic.py``,
  as ``bench_rescore.py`` writes them), also in a pool of 2 processes; whole
  tapes, and sessions sent one by one still compressed (the way for tapes over
  16 MiB); with the driver's CPU per session and a projection;
- replay of a ``--cases`` x 3 (300-attempt) synthetic suite: a one-call
  Python agent recorded live against a 127.0.0.1 server, then replayed;
- the per-task overhead: a Ray task that does nothing, and the replay's
  extra time per attempt.

Replaces the "Scaling out with Ray" section of docs/performance.md.

    python evals/perf/bench_ray.py               # measure and update the doc
    python evals/perf/bench_ray.py --sessions 500 --cases 20 --no-doc
"""

from __future__ import annotations

import argparse
import os
import statistics
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
from evaltape.scoring.run.executors._processes import process_executor  # noqa: E402
from evaltape.scoring.run.rescore._tapes import rescore_on  # noqa: E402

HEADING = "## Scaling out with Ray"
DOC = ROOT / "docs" / "performance.md"
WORKERS = 2
TRIALS = 3
CONCURRENCY = 4


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = work()
    return time.perf_counter() - started, value


def timed_cpu(work: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, this process's CPU seconds (every thread, no children), the value."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = work()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def rescore_rows(folder: Path, sessions: int, address: str, reps: int) -> dict[str, Any]:
    from evaltape.scoring.run.executors._process_rescore import ProcessRescorer
    from evaltape.scoring.run.executors._ray_rescore import BATCH, RayRescorer
    from evaltape.scoring.run.rescore._whole import WHOLE_TAPE_BYTES

    written, tapes = timed(lambda: write_tapes(folder / "cassettes", sessions))
    cases = {c.id: c for c in (make_case(i) for i in range(20))}
    options: dict[str, Any] = {
        "cassettes": folder / "cassettes",
        "results": folder / "results",
        "scorer": make_scorer(),
    }
    made: dict[int, list[RayRescorer]] = {WHOLE_TAPE_BYTES: [], 0: []}

    def on_ray(limit: int) -> Callable[[Any, Any], RayRescorer]:
        def make(scorer: Any, floors: Any) -> RayRescorer:
            rescorer = RayRescorer(
                scorer, floors, address=address, num_cpus=WORKERS, whole_limit=limit
            )
            made[limit].append(rescorer)
            return rescorer

        return make

    def in_pool(limit: int) -> Callable[[Any, Any], ProcessRescorer]:
        def make(scorer: Any, floors: Any) -> ProcessRescorer:
            return ProcessRescorer(scorer, floors, processes=WORKERS, whole_limit=limit)

        return make

    ways: dict[str, Any] = {
        "pool": in_pool(WHOLE_TAPE_BYTES),
        "ray": on_ray(WHOLE_TAPE_BYTES),
        "pool_sessions": in_pool(0),
        "ray_sessions": on_ray(0),
    }
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("threads", *ways)}
    n = 0
    for _ in range(reps):  # interleaved, so a slow minute of the machine hits every way
        here_s, here_cpu, here = timed_cpu(lambda: rescore_tapes(tapes, cases, **options))
        runs["threads"].append((here_s, here_cpu))
        for kind, way in ways.items():
            s, cpu, there = timed_cpu(lambda way=way: rescore_on(way, tapes, cases, **options))
            if there != here:
                raise SystemExit(f"rescore ({kind}) differs from rescore in this process")
            runs[kind].append((s, cpu))
        n = len(here.rescored)

    def wall(kind: str) -> float:
        return statistics.median(s for s, _ in runs[kind])

    def cpu_ms(kind: str) -> float:
        return statistics.median(c for _, c in runs[kind]) / n * 1000

    def spread(kind: str) -> str:
        ratios = [t[0] / o[0] for t, o in zip(runs["threads"], runs[kind], strict=True)]
        return f"{min(ratios):.2f}-{max(ratios):.2f}x"

    found: dict[str, Any] = {
        "sessions": n,
        "reps": reps,
        "write_s": written,
        "tapes": len(tapes),
        "tape_mb": sum(t.stat().st_size for t in tapes) / len(tapes) / 2**20,
        "tasks": made[WHOLE_TAPE_BYTES][0].tasks,
        "session_tasks": made[0][0].tasks,
        "batch": BATCH,
        "tape_kb": sum(t.stat().st_size for t in tapes) / n / 1024,
    }
    for kind in runs:
        found[f"{kind}_s"] = wall(kind)
        found[f"{kind}_cpu_ms"] = cpu_ms(kind)
        found[f"{kind}_spread"] = spread(kind)
    return found


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
    executors = (
        ("threads", thread_executor),
        ("processes", process_executor(processes=WORKERS, project=ROOT)),
        ("ray", ray_executor(address=address, project=ROOT)),
    )
    verdicts = {}
    for name, executor in executors:
        jobs = plan_replay(sessions, folder / name, "replay")
        seconds, outcome = timed(
            lambda jobs=jobs, executor=executor: run_pool(
                jobs, _env("http://127.0.0.1:9/v1"), concurrency=CONCURRENCY, executor=executor
            )
        )
        rows[f"{name}_s"] = seconds
        verdicts[name] = sorted((r.case.id, r.attempt, r.verdict.value) for r in outcome.results)
    if len(verdicts["ray"]) != len(sessions) or not (
        verdicts["ray"] == verdicts["processes"] == verdicts["threads"]
    ):
        raise SystemExit("replay on Ray or in processes gave other verdicts than threads")
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
            rescore = rescore_rows(Path(tmp), args.sessions, address, args.reps)
    finally:
        ray.shutdown()
    load_after = os.getloadavg()
    r = rescore
    p_ratio = replay["threads_s"] / replay["ray_s"]
    q_ratio = replay["threads_s"] / replay["processes_s"]
    replay_head = (
        f"| replay {replay['attempts']:,} attempts of a one-call agent "
        f"(concurrency {CONCURRENCY}) | seconds | ratio to threads |"
    )
    extra_ms = (replay["ray_s"] - replay["threads_s"]) / replay["attempts"] * 1000
    work_ms = r["threads_cpu_ms"]  # one session on one core: read, decode, fold, score
    big, workers = 100_000, 16
    driver_total = big * r["ray_cpu_ms"] / 1000
    worker_total = big * work_ms / 1000 / workers
    projected = max(driver_total, worker_total)
    bound = "the driver" if driver_total >= worker_total else "the workers"
    ceiling_pool = WORKERS * work_ms / (work_ms + r["pool_cpu_ms"])
    ceiling_ray = WORKERS * work_ms / (work_ms + r["ray_cpu_ms"])
    rows = [
        (f"{WORKERS} processes (`auto`), whole tapes", "pool"),
        (f"Ray, {WORKERS} workers, whole tapes ({r['tasks']} tasks)", "ray"),
        (f"{WORKERS} processes, sessions one by one (batches of 64)", "pool_sessions"),
        (
            f"Ray, {WORKERS} workers, sessions one by one "
            f"({r['session_tasks']} tasks of {r['batch']})",
            "ray_sessions",
        ),
    ]
    table = "\n".join(
        f"| {label} | {r[kind + '_s']:.1f} s | **{r['threads_s'] / r[kind + '_s']:.2f}x** "
        f"| {r[kind + '_spread']} |"
        for label, kind in rows
    )
    return f"""{HEADING}

Rescoring the same tapes several ways, side by side in one run: in this process
(`--executor threads`), in a pool of {WORKERS} processes on this machine (`auto`,
the default), and as Ray tasks on a local Ray instance of {WORKERS} workers
(`num_cpus={WORKERS}`, 127.0.0.1); then a replay three ways.
Ratios are thread time / other time: above 1, the other is faster.  Results and
verdicts are checked to be identical before a figure is reported.  A tape of up
to 16 MiB goes to a process (its path) or to Ray (its bytes) whole, and is read,
decoded, folded and scored there; the reading process reads none of its frames.
A larger tape is read by the reading process and its sessions are sent one by
one, still compressed, in batches: the *sessions one by one* rows measure that
way on the same tapes.  Here {r["tapes"]} tapes of {r["tape_mb"]:.1f} MB
({r["tape_kb"]:.1f} KB a session).

```sh
python evals/perf/bench_ray.py --sessions {args.sessions} --cases {args.cases} --reps {args.reps}
```

Machine: {machine()}; ray {ray.__version__}.  Load average {load[0]:.1f} when
the run started, {load_after[0]:.1f} when it ended, on 2 cores; the ratios,
measured back to back, are the figures to read.  The rescore was run {r["reps"]} times,
every way interleaved in each run; the table gives medians, and the last column the
lowest and highest ratio of the runs.

| rescore {r["sessions"]:,} 25-turn sessions | seconds | ratio to threads | runs |
|---|---:|---:|---:|
| threads (this process) | {r["threads_s"]:.1f} s | 1.00x | |
{table}

On {WORKERS} cores the workers share the CPUs with the reading process, so a ratio
cannot pass {WORKERS} x work / (work + reading CPU): {ceiling_pool:.2f}x for the processes
and {ceiling_ray:.2f}x for Ray here, sending whole tapes (Ray's own processes take their
share on top).  A single run's ratio above that bound means other work on this shared
machine slowed that run's threads pass more than the rest.

| the reading process's CPU per session | ms |
|---|---:|
| threads: read, decode, fold and score it | {r["threads_cpu_ms"]:.2f} |
| processes, whole tapes: send the path, take the results | {r["pool_cpu_ms"]:.2f} |
| Ray (the driver), whole tapes: send the bytes, take the results | {r["ray_cpu_ms"]:.2f} |
| processes, sessions one by one: read, send, take the results | {r["pool_sessions_cpu_ms"]:.2f} |
| Ray, sessions one by one: read, send, take the results | {r["ray_sessions_cpu_ms"]:.2f} |

**Projection, 10^5 sessions on {workers} Ray workers** (in tapes of up to 16 MiB,
so at least as many tapes as workers).  The driver's CPU per
session ({r["ray_cpu_ms"]:.2f} ms) times 10^5 is {driver_total:.0f} s; one
session's work on one core ({work_ms:.2f} ms) times 10^5 over {workers} workers is
{worker_total:.0f} s.  The two overlap (the driver sends while the workers
score), so the run takes about max({driver_total:.0f} s, {worker_total:.0f} s) =
**{projected:.0f} s**, bound by {bound}, plus starting or joining the cluster.

{replay_head}
|---|---:|---:|
| threads (this process) | {replay["threads_s"]:.1f} s | 1.00x |
| {WORKERS} processes (`auto`) | {replay["processes_s"]:.1f} s | **{q_ratio:.2f}x** |
| Ray, {WORKERS} workers | {replay["ray_s"]:.1f} s | **{p_ratio:.2f}x** |

| overhead | value |
|---|---:|
| starting the local Ray instance | {start_s:.1f} s |
| one Ray task that does nothing ({WORKERS} workers, 200 at once) | {overhead_ms:.1f} ms |
| replay: extra time per attempt on Ray | {extra_ms:+.1f} ms |

(The {r["sessions"]:,} sessions' tapes took {r["write_s"]:.0f} s to write; that
is not part of any figure.)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=4_000, help="sessions to rescore")
    parser.add_argument("--cases", type=int, default=100, help="cases in the replayed suite")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rescore runs (medians)")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    text = section(args)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
