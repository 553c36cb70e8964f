"""Benchmark: peak memory of concurrent tape writers, against one writer.

Each open session holds one zstd compression stream.  This opens N sessions at
once (as N concurrent attempts do), appends the same recorded exchanges to each
in turn and ends them, in a fresh process per N, and reports the process's
peak RSS beside the single-writer figure: with the writer's match-finder tables
(``_TABLE_LOG``) and with zstd's own level-9 tables, for comparison.

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

from evals.perf._report import machine, replace_section  # noqa: E402

HEADING = "## Memory of concurrent tape writers"
DOC = ROOT / "docs" / "performance.md"
TARGET = 1.5
"""Peak RSS at the default concurrency over the single writer's."""

CHILD = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from evaltape.recorder import SessionStarted, open_session
from evaltape.recorder import _writer
from evals.perf.traffic import agent_session
writers, folder, usual = int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] == "usual"
if usual:
    _writer._TABLE_LOG = 64  # zstd's own table sizes for the level
events = agent_session(25, seed=1).exchanges
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
open_ = [
    open_session(folder / f"{n}.tape", SessionStarted(session_id=f"{n + 1:016x}", started_at=0.0))
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


def run(writers: int, usual: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-mem-") as scratch:
        argv = [sys.executable, "-c", CHILD, str(ROOT), str(writers), scratch]
        done = subprocess.run(
            [*argv, "usual" if usual else "small"], capture_output=True, text=True, check=True
        )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def section(counts: list[int]) -> str:
    rows = ["| tables | writers | peak RSS | added by the writers | peak / one writer | tape |"]
    rows.append("|---|---:|---:|---:|---:|---:|")
    ratios: dict[tuple[str, int], float] = {}
    for label, usual in (("the writer's (2^19 entries)", False), ("zstd level 9's own", True)):
        one = run(1, usual)
        for n in counts:
            r = one if n == 1 else run(n, usual)
            ratios[(label, n)] = r["peak"] / one["peak"]
            rows.append(
                f"| {label} | {n} | {r['peak']:.0f} MiB | {r['peak'] - r['base']:.0f} MiB | "
                f"{r['peak'] / one['peak']:.2f}x | {r['tape']:,.0f} B |"
            )
    worst = max(v for (label, n), v in ratios.items() if label.startswith("the writer"))
    verdict = "met" if worst <= TARGET else "**missed**"
    return f"""{HEADING}

N sessions open at once, each appended the same 25 exchanges of
`evals/perf/traffic.py` in turn and then ended, in a fresh process per row;
peak RSS of that process (`ru_maxrss`).  The runner's default concurrency is
16 attempts, each with its own open session.

```sh
python evals/perf/bench_writer_memory.py
```

Machine: {machine()}.

{chr(10).join(rows)}

Target: peak RSS at the default concurrency within {TARGET}x the single-writer
figure: {worst:.2f}x with the writer's tables, {verdict}.  What a writer holds is
its zstd stream: a 4 MiB window (the format's largest, so later events
compress against earlier ones) and the match finder's hash and chain tables,
which zstd sizes for inputs of any length at level 9 (2^21 and 2^20 entries,
about 10 MiB per open session).  A session's events are a few MB at most, so
the writer caps both tables at 2^19 entries; the tapes differ in size by well
under 1% (the last column).  This measures the writers alone; a live run's
attempts also hold their agents, clients and workspaces.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", default="1,4,16")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    text = section([int(n) for n in args.writers.split(",")])
    print(text)
    if not args.no_doc:
        replace_section(DOC, HEADING, text)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
