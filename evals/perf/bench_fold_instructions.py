"""Benchmark: CPU instructions per rescored session, counted rather than timed.

Timing a fold on a shared two-core machine moves by about a tenth from one run to
the next, more than most single changes to the fold save.  This counts the
instructions instead, with valgrind's cachegrind (the same count on every run to
a fraction of a percent), on the sessions of ``bench_rescore_sdk.py`` (25-turn
coding-agent sessions recorded through the real openai and anthropic SDKs):

- read: ``TapeReader(path).sessions()``;
- read + fold: ``fold(session.events)`` of each session as it is read, which is
  what ``rescore_tapes`` spends (the scorers add under 1%).

Each figure is the difference between a child process that handles 30 sessions
and one that handles 10, divided by 20, so interpreter start-up and imports
cancel out.  ``--against REV`` counts the same for another revision of this
repository (checked out in a temporary git worktree), side by side.

    apt-get install valgrind        # Debian's package
    python evals/perf/bench_fold_instructions.py --against 7f1804c
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402

HEADING = "## Instructions per rescored session"
DOC = ROOT / "docs" / "performance.md"
FEW, MANY = 10, 30
"""Sessions the two child processes handle."""

CHILD = """
import sys
from evaltape.recorder import TapeReader, fold
path, n, fold_too = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "fold"
for i, session in enumerate(TapeReader(path).sessions()):
    if i >= n:
        break
    if fold_too:
        fold(session.events)
"""


def instructions(tree: Path, tape: Path, sessions: int, mode: str) -> int:
    """Instructions a child process running ``CHILD`` with ``tree``'s evaltape executes."""
    env = {**os.environ, "PYTHONPATH": str(tree / ".typecheck")}
    out = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            "-c",
            CHILD,
            str(tape),
            str(sessions),
            mode,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no instruction count:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_session(tree: Path, tape: Path, mode: str) -> float:
    many = instructions(tree, tape, MANY, mode)
    few = instructions(tree, tape, FEW, mode)
    return (many - few) / (MANY - FEW)


def make_tapes(folder: Path) -> dict[str, Path]:
    """One tape of ``MANY`` sessions per API and traffic kind (``bench_rescore_sdk``'s)."""
    from evals.perf.bench_rescore_sdk import case_for, copy_sessions, record_all

    tapes = {}
    for (api, kind), sources in record_all(folder, 40).items():
        tape = folder / f"{api}-{kind}.tape"
        copy_sessions(sources, tape, case_for(api, kind).id, MANY)
        tapes[f"{api} {kind}"] = tape
    return tapes


def measure(tapes: dict[str, Path], trees: dict[str, Path]) -> list[list[str]]:
    rows = []
    for name, tape in tapes.items():
        for mode in ("read", "fold"):
            counts = {label: per_session(tree, tape, mode) for label, tree in trees.items()}
            row = [name, "read" if mode == "read" else "read + fold"]
            row += [f"{c / 1e6:.2f} M" for c in counts.values()]
            if len(counts) == 2:
                now, then = counts.values()
                row.append(f"{now / then:.3f}x")
            rows.append(row)
    return rows


def section(rows: list[list[str]], labels: list[str], against: str | None) -> str:
    head = ["traffic", "work", *(f"instructions / session, {label}" for label in labels)]
    if against:
        head.append("this tree / " + labels[1])
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    command = "python evals/perf/bench_fold_instructions.py"
    if against:
        command += f" --against {against}"
    return f"""{HEADING}

Instructions counted by valgrind's cachegrind for reading the sessions of
*Rescoring SDK-recorded sessions* and for reading and folding them (what
rescoring spends: the scorers add under 1%): the difference between a child
process that handles {MANY} sessions and one that handles {FEW}, per session.
Unlike CPU time on a shared machine, these counts repeat to a fraction of a
percent, so a change to the reader or the fold can be judged by them.

```sh
apt-get install valgrind
{command}
```

Machine: {machine()}.

{chr(10).join(lines)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="a revision to count side by side (git worktree)")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-instructions-") as scratch:
        folder = Path(scratch)
        trees = {"this tree": ROOT}
        if args.against:
            other = folder / "against"
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(ROOT),
                    "worktree",
                    "add",
                    "-q",
                    "--detach",
                    str(other),
                    args.against,
                ],
                check=True,
            )
            trees[args.against] = other
        try:
            rows = measure(make_tapes(folder / "tapes"), trees)
        finally:
            if args.against:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)],
                    check=False,
                )
    text = section(rows, list(trees), args.against)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
