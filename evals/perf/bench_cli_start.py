"""Benchmark: how long ``evaltape --help`` takes, beside ``python -c pass``.

Runs, interleaved, ``evaltape --help`` (the installed console script),
``python -c pass`` (the interpreter's own start-up) and ``python -c "import
evaltape.scoring._public"`` (every public name of evaltape.scoring: what
``--help`` loaded while the commands were imported eagerly), each as a fresh
process; median wall time and median CPU time (user + system of the child).

    python evals/perf/bench_cli_start.py            # measure and update the doc
    python evals/perf/bench_cli_start.py --no-doc --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402

HEADING = "## CLI start-up"
DOC = ROOT / "docs" / "performance.md"
TARGET_MS = 150.0


def _run(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(runs: int) -> dict[str, tuple[float, float]]:
    script = shutil.which("evaltape", path=os.path.dirname(sys.executable)) or "evaltape"
    commands = {
        "evaltape --help": [script, "--help"],
        "python -c pass": [sys.executable, "-c", "pass"],
        "import evaltape.scoring (all public names)": [
            sys.executable,
            "-c",
            "import evaltape.scoring._public",
        ],
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            got[name].append(_run(argv))
    return {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in got.items()
    }


def section(result: dict[str, tuple[float, float]], runs: int) -> str:
    base_wall, base_cpu = result["python -c pass"]
    lines = [
        "| command | wall (median) | CPU (median) | wall / `python -c pass` "
        "| CPU / `python -c pass` |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (wall, cpu) in result.items():
        lines.append(
            f"| `{name}` | {wall * 1e3:.0f} ms | {cpu * 1e3:.0f} ms | "
            f"{wall / base_wall:.1f}x | {cpu / base_cpu:.1f}x |"
        )
    wall, cpu = result["evaltape --help"]
    verdict = "met" if cpu * 1e3 < TARGET_MS else "**missed**"
    return f"""{HEADING}

`evaltape --help` lists the commands from the table in `scoring/cli/main.py`
(name, module, one-line help) and imports no command; a command's module is
imported when it runs.  {runs} runs of each, interleaved, each a fresh process.

```sh
python evals/perf/bench_cli_start.py
```

Machine: {machine()}; shared with other work, so wall times run above CPU times.

{chr(10).join(lines)}

Target: `evaltape --help` under {TARGET_MS:.0f} ms: {cpu * 1e3:.0f} ms of CPU, {verdict}
(wall {wall * 1e3:.0f} ms on this shared machine).  The third row is what the help
loaded before, when every command was imported to print it.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    text = section(measure(args.runs), args.runs)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
