"""Benchmark: peak RSS of whole runs at the default concurrency, against one attempt at a time.

Two real runs, each in its own ``evaltape`` process:

- **live**: ``evaltape live`` of the project's suites with the reference agent
  (``evals.agent:run``, forced strategy) against the simulated competent model
  (``evals/sim/competent_model.py`` on 127.0.0.1), 3 trials, the tapes into a
  scratch folder;
- **main job**: ``evaltape replay`` in the repository's root (the shipped
  cassettes).

Each runs at ``--concurrency 1``, at the default (4) and at 16, interleaved,
the best of ``--repeat`` runs.  The figure is the ``evaltape`` process's own
peak RSS (``ru_maxrss`` read as it exits), so the sandbox and verify commands
it starts are not counted.

    python evals/perf/bench_run_memory.py           # measure and update the doc
    python evals/perf/bench_run_memory.py --no-doc --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402

HEADING = "## Memory of whole runs"
DOC = ROOT / "docs" / "performance.md"
TARGET = 1.5
"""Peak RSS at the default concurrency over the figure at ``--concurrency 1``."""
DEFAULT = 4
"""The ``concurrency`` setting's default."""
MODEL = "simulated-competent"

CHILD = r"""
import atexit, json, resource, sys
out = sys.argv.pop(1)
def report():
    with open(out, "w") as f:
        json.dump({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, f)
atexit.register(report)
sys.argv[0] = "evaltape"
from evaltape.scoring.cli.main import cli
cli()
"""
"""``evaltape`` itself, reporting its own peak RSS (MiB) into a file as it exits."""


def _server(port_file: Path) -> tuple[subprocess.Popen[bytes], str]:
    program = ROOT / "evals" / "sim" / "competent_model.py"
    log = port_file.open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(program), "--port", "0"], stdout=log, stderr=subprocess.STDOUT
    )
    for _ in range(200):
        text = port_file.read_text()
        if text.startswith("listening on "):
            return proc, text.split()[2]
        if proc.poll() is not None:
            raise SystemExit(f"the simulated model exited: {text}")
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    raise SystemExit("the simulated model did not start")


def _evaltape(args: list[str], env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-run-") as scratch:
        out = Path(scratch) / "peak.json"
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(out), *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        if not out.exists() or done.returncode not in (0, 1):
            raise SystemExit(f"evaltape {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        peak: float = json.loads(out.read_text())["peak"]
        return peak


def live(concurrency: int, base_url: str, trials: int) -> tuple[float, int]:
    """Peak RSS (MiB) of one live run and the bytes of tape it wrote."""
    env = {**os.environ, "EVALTAPE_AGENT_STRATEGY": "forced", "OPENAI_API_KEY": "local-no-key"}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-tapes-") as tapes:
        results = Path(tapes) / "results"
        args = ["live", "-m", MODEL, "--trials", str(trials), "--seed", "7"]
        args += ["--concurrency", str(concurrency), "--agent", "evals.agent:run"]
        args += ["--base-url", base_url, "--cassettes", tapes, "--update-cassettes"]
        args += ["--source", "simulated", "--results", str(results), "--no-step-summary"]
        peak = _evaltape(args, env)
        size = sum(p.stat().st_size for p in Path(tapes).rglob("*.tape"))
    return peak, size


def replay(concurrency: int) -> float:
    """Peak RSS (MiB) of the main job."""
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-results-") as results:
        args = ["replay", "--concurrency", str(concurrency), "--results", results]
        return _evaltape([*args, "--no-step-summary"], dict(os.environ))


def measure(counts: list[int], repeat: int, trials: int) -> dict[str, dict[int, float]]:
    best: dict[str, dict[int, float]] = {"live": {}, "main job": {}, "tape": {}}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-sim-") as scratch:
        server, base_url = _server(Path(scratch) / "url.txt")
        try:
            for _ in range(repeat):
                for n in counts:  # interleaved: every variant once per pass
                    peak, size = live(n, base_url, trials)
                    best["live"][n] = min(best["live"].get(n, peak), peak)
                    best["tape"][n] = size
                    peak = replay(n)
                    best["main job"][n] = min(best["main job"].get(n, peak), peak)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait()
    return best


def section(best: dict[str, dict[int, float]], repeat: int, trials: int) -> str:
    counts = sorted(best["live"])
    rows = ["| run | concurrency | peak RSS | over one at a time |", "|---|---:|---:|---:|"]
    worst = 0.0
    for run in ("live", "main job"):
        one = best[run][1]
        for n in counts:
            ratio = best[run][n] / one
            if n == DEFAULT:
                worst = max(worst, ratio)
            label = f"{n} (default)" if n == DEFAULT else str(n)
            rows.append(f"| {run} | {label} | {best[run][n]:.0f} MiB | {ratio:.2f}x |")
    sizes = ", ".join(f"{best['tape'][n]:,.0f} B at {n}" for n in counts)
    verdict = "met" if worst <= TARGET else f"**missed** by {worst / TARGET:.2f}x"
    return f"""{HEADING}

Peak RSS of the `evaltape` process (`ru_maxrss` as it exits; the sandboxed
commands it starts are not counted) for two real runs: `evaltape live` of the
project's suites ({trials} trials, the reference agent `evals.agent:run` with
the forced strategy, against the simulated competent model
`evals/sim/competent_model.py` on 127.0.0.1, tapes into a scratch folder) and
the main job, `evaltape replay` in the repository's root.  Each at
`--concurrency 1`, the default ({DEFAULT}) and 16, interleaved, the best of
{repeat}.

```sh
python evals/perf/bench_run_memory.py
```

Machine: {machine()}.

{chr(10).join(rows)}

Target: peak RSS at the default concurrency within {TARGET}x the figure at
`--concurrency 1`: {worst:.2f}x at worst, {verdict}.  The live runs' tapes
(every case's sessions): {sizes}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default=f"1,{DEFAULT},16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.concurrency.split(",")]
    text = section(measure(counts, args.repeat, args.trials), args.repeat, args.trials)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
