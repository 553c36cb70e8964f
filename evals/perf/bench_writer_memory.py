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
events = agent_session(int(sys.argv[5]), seed=1).exchanges
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


def run(writers: int, usual: bool, turns: int = 25) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-mem-") as scratch:
        argv = [sys.executable, "-c", CHILD, str(ROOT), str(writers), scratch]
        argv += ["usual" if usual else "small", str(turns)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def section(counts: list[int]) -> str:
    rows = ["| tables | writers | peak RSS | added by the writers | peak / one writer | tape |"]
    rows.append("|---|---:|---:|---:|---:|---:|")
    ratios: dict[tuple[str, int], float] = {}
    for label, usual in (("the writer's (2^17 entries)", False), ("zstd level 9's own", True)):
        one = run(1, usual)
        for n in counts:
            r = one if n == 1 else run(n, usual)
            ratios[(label, n)] = r["peak"] / one["peak"]
            rows.append(
                f"| {label} | {n} | {r['peak']:.0f} MiB | {r['peak'] - r['base']:.0f} MiB | "
                f"{r['peak'] / one['peak']:.2f}x | {r['tape']:,.0f} B |"
            )
    worst = max(v for (label, n), v in ratios.items() if label.startswith("the writer"))
    verdict = "met" if worst <= TARGET else f"**missed** by {worst / TARGET:.2f}x"
    default = ratios.get(("the writer's (2^17 entries)", 4), 0.0)
    sizes = ["| turns | tape, the writer's tables | tape, zstd's own | change |"]
    sizes.append("|---:|---:|---:|---:|")
    for turns in (25, 200, 500):
        small, usual = run(1, False, turns)["tape"], run(1, True, turns)["tape"]
        sizes.append(
            f"| {turns} | {small:,.0f} B | {usual:,.0f} B | {(small / usual - 1) * 100:+.1f}% |"
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
{worst:.2f}x with the writer's tables, {verdict} (4 writers, the runner's
default concurrency: {default:.2f}x).  What a writer holds is its zstd stream:
a window of up to 4 MiB (the format's largest, so later events compress
against earlier ones; only what the session wrote is touched) and the match
finder's tables, which zstd sizes for inputs of any length at level 9 (2^21
hash entries, about 10 MiB per open session).  A session's events are a few
MB at most, so the writer caps the tables at 2^17 entries.  What that costs in
tape size, one session of `evals/perf/traffic.py` per row:

{chr(10).join(sizes)}
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
