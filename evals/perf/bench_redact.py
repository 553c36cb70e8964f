"""Benchmark: redaction time grows linearly with the body, measured against a baseline.

The body is the one the linearity test uses (``tests/test_redact.py``): a JSON
object with 100 KB of ``"word "`` text and a 50-character token, repeated
``--sizes`` times.  Each size is redacted by ``default_redactor().redact_bytes``
and, side by side, scanned by a baseline of one ``re.finditer`` pass for a
literal (linear by construction), interleaved, ``--reps`` times; times are
medians.  Linear redaction keeps its ratio to the baseline flat as the body
grows.  Updates the "Redaction on large bodies" section of docs/performance.md.

    python evals/perf/bench_redact.py                   # updates the doc
    python evals/perf/bench_redact.py --no-doc          # print the section only
    python evals/perf/bench_redact.py --sizes 2,20 --reps 5 --no-doc
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evals.perf._report import kb, machine, replace_section
from evaltape.recorder.redact import default_redactor

HEADING = "## Redaction on large bodies"
DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"
FILLER = json.dumps({"content": "word " * 20000, "token": "x" * 50}).encode()
BASELINE = re.compile(rb"sk-")


def _time(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def measure(sizes: list[int], reps: int) -> list[tuple[int, int, float, float]]:
    """(repeats, bytes, median redaction seconds, median baseline seconds) per size."""
    redactor = default_redactor()
    redactor.redact_bytes(FILLER)  # patterns compiled, caches warm
    rows = []
    for n in sizes:
        body = FILLER * n
        redact, base = [], []
        for _ in range(reps):
            redact.append(_time(lambda body=body: redactor.redact_bytes(body)))
            base.append(_time(lambda body=body: sum(1 for _ in BASELINE.finditer(body))))
        rows.append((n, len(body), statistics.median(redact), statistics.median(base)))
    return rows


def section(rows: list[tuple[int, int, float, float]], reps: int, command: str) -> str:
    first = rows[0]
    lines = [
        HEADING,
        "",
        "`default_redactor().redact_bytes` on one body of growing size, beside a baseline",
        'that scans the same bytes once with `re.finditer(rb"sk-")`, interleaved.',
        f"Produced by `{command}` ({reps} repetitions, medians).",
        "",
        f"Machine: {machine()}.",
        "",
        "| body | redaction | baseline | redaction / baseline | growth of redaction "
        "| growth of baseline |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for _n, size, redact, base in rows:
        lines.append(
            f"| {kb(size)} | {redact * 1000:,.2f} ms | {base * 1000:,.2f} ms "
            f"| {redact / base:,.1f}x | {redact / first[2]:,.1f}x | {base / first[3]:,.1f}x |"
        )
    lines += [
        "",
        "Growth is the time over the smallest body's time; linear redaction grows as the",
        "baseline does, so its ratio to the baseline stays flat.  The test suite pins the",
        "same property by counting function calls (`tests/test_redact.py`), not by timing.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,20,200", help="repeats of the filler body")
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per size")
    parser.add_argument("--no-doc", action="store_true", help="print instead of updating docs")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    command = (
        "python evals/perf/bench_redact.py"
        + (f" --sizes {args.sizes}" if args.sizes != "2,20,200" else "")
        + (f" --reps {args.reps}" if args.reps != 7 else "")
    )
    text = section(measure(sizes, args.reps), args.reps, command)
    if args.no_doc:
        print(text)
    else:
        replace_section(DOC, HEADING, text)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
