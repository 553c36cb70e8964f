"""Benchmark: peak memory of concurrent tape writers, against one writer.

Each open session holds one zstd compression stream.  This opens N sessions at
once (as N concurrent attempts do), appends the same recorded exchanges to each
in turn and ends them, in a fresh process per N, and reports the process's
peak RSS beside the single-writer figure: with the writers' budget of match-finder
tables (``recorder/tape/_table_budget.py``: the first 4 open writers get 2^19 entries,
any more 2^17) and with zstd's own level-9 tables, for comparison.

    python evals/perf/bench_writer_memory.py           # measure and update the doc
    python evals/perf/bench_writer_memory.py --no-doc
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402

HEADING = "## Memory of concurrent tape writers"
DOC = ROOT / "docs" / "performance.md"
TARGET = 1.5
"""Peak RSS at the default concurrency over the single writer's."""

CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from evaltape.recorder import SessionStarted, open_session
from evaltape.recorder.tape import _table_budget
from evals.perf.traffic import agent_session
writers, folder, tables = int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
level = None  # the writer's own parameters
if tables == "usual":  # zstd's own table sizes at level 9
    _table_budget.TABLES = _table_budget.TableBudget(large_log=64, small_log=63)
    level = 9
elif tables == "small":  # every writer past the budget
    _table_budget.TABLES = _table_budget.TableBudget(large_writers=0)
events = agent_session(int(sys.argv[5]), seed=1).exchanges
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
open_ = [
    open_session(
        folder / f"{n}.tape",
        SessionStarted(session_id=f"{n + 1:016x}", started_at=0.0),
        level=level,
    )
    for n in range(writers)
]
for event in events:
    for w in open_:
        w.append(event)
for w in open_:
    w.end()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tape = (folder / "0.tape").stat().st_size
print(json.dumps({"base": base / 1024, "peak": peak / 1024, "tape": tape}))
"""


BUDGET = "the writers' budget (2^19 entries for 4, then 2^17)"
OWN = "zstd level 9's own"


def run(writers: int, tables: str, turns: int = 25) -> dict[str, float]:
    """Peak RSS and tape size of ``writers`` open at once; ``tables`` is budget, small or usual."""
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-mem-") as scratch:
        argv = [sys.executable, "-c", CHILD, str(ROOT), str(writers), scratch]
        argv += [tables, str(turns)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def section(counts: list[int]) -> str:
    rows = ["| tables | writers | peak RSS | added by the writers | peak / one writer | tape |"]
    rows.append("|---|---:|---:|---:|---:|---:|")
    ratios: dict[tuple[str, int], float] = {}
    for label, tables in ((BUDGET, "budget"), (OWN, "usual")):
        one = run(1, tables)
        for n in counts:
            r = one if n == 1 else run(n, tables)
            ratios[(label, n)] = r["peak"] / one["peak"]
            rows.append(
                f"| {label} | {n} | {r['peak']:.0f} MiB | {r['peak'] - r['base']:.0f} MiB | "
                f"{r['peak'] / one['peak']:.2f}x | {r['tape']:,.0f} B |"
            )
    worst = max(v for (label, n), v in ratios.items() if label == BUDGET)
    verdict = "met" if worst <= TARGET else f"**missed** by {worst / TARGET:.2f}x"
    default = ratios.get((BUDGET, 4), 0.0)
    sizes = ["| turns | tape, 2^19 entries | tape, 2^17 entries | tape, zstd's own | 2^19 / own |"]
    sizes.append("|---:|---:|---:|---:|---:|")
    for turns in (25, 200, 500):
        large, small = run(1, "budget", turns)["tape"], run(1, "small", turns)["tape"]
        usual = run(1, "usual", turns)["tape"]
        sizes.append(
            f"| {turns} | {large:,.0f} B | {small:,.0f} B | {usual:,.0f} B | "
            f"{(large / usual - 1) * 100:+.1f}% |"
        )
    return f"""{HEADING}

N sessions open at once, each appended the same 25 exchanges of
`evals/perf/traffic.py` in turn and then ended, in a fresh process per row;
peak RSS of that process (`ru_maxrss`).  This is `open_session` (what
`recording_client` and the pytest plugin write with, one stream per open
session, every event on disk as it comes); the runner keeps each attempt's
session in memory until it ends and compresses it then (*Memory of whole
runs*).

```sh
python evals/perf/bench_writer_memory.py
```

Machine: {machine()}.

{chr(10).join(rows)}

Target: 16 open writers within {TARGET}x the single writer's peak RSS:
{worst:.2f}x with the writers' budget, {verdict} (4 writers, the runner's
default concurrency: {default:.2f}x).  What the tables cost in tape size on this
benchmark's traffic, one session per row:

{chr(10).join(sizes)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", default="1,4,16")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    text = section([int(n) for n in args.writers.split(",")])
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
