"""The release gate's power and false-alarm rate, measured by seeded simulation.

Each simulated pair is a baseline run and a current run of the same suite
(3 trials per case).  Per-case pass rates are either all 0.93 ("flat") or
drawn once per pair from Beta(9.3, 0.7) (mean 0.93, "spread"), the same for
both runs; the current run loses ``drop`` points on every case (clipped at
0).  Every pair goes through ``decide_gate`` exactly as a CI run would; the
table gives the share of pairs that close the gate.  Drop 0 is the
false-alarm rate.  Seeded: the same arguments give the same table on any
machine.

Rewrites the table between the markers in docs/statistics.md.

    python evals/perf/power_table.py              # simulate and update the doc
    python evals/perf/power_table.py --no-doc     # print the table only
    python evals/perf/power_table.py --pairs 200 --no-doc
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evaltape.scoring import AttemptResult, GateState, Verdict, decide_gate

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
START = "<!-- power-table:start -->"
END = "<!-- power-table:end -->"
TRIALS = 3
RATE = 0.93
BETA = (9.3, 0.7)
SIZES = (20, 50, 200)
DROPS = (0.0, 0.05, 0.10, 0.20)
ALPHA = 0.05
SEED = 2026


class Attempts:
    """Prebuilt attempt values, one per (case, trial, verdict), shared by every run."""

    def __init__(self, cases: int) -> None:
        self.cases = cases
        self.table = {
            (i, t, passed): AttemptResult(
                suite="sim",
                case_id=f"case{i:03d}",
                model="m",
                attempt=t,
                verdict=Verdict.PASSED if passed else Verdict.FAILED,
            )
            for i in range(cases)
            for t in range(TRIALS)
            for passed in (True, False)
        }

    def run(self, outcomes: np.ndarray) -> list[AttemptResult]:
        """The attempts of a run whose (case, trial) outcomes are ``outcomes``."""
        return [
            self.table[(i, t, bool(outcomes[i, t]))]
            for i in range(self.cases)
            for t in range(TRIALS)
        ]


def simulate(
    cases: int, drop: float, spread: bool, pairs: int, rng: np.random.Generator
) -> tuple[float, float]:
    """(share of pairs that close the gate, share closed by the paired test alone)."""
    built = Attempts(cases)
    closed = by_test = 0
    for _ in range(pairs):
        p = rng.beta(*BETA, size=cases) if spread else np.full(cases, RATE)
        before = rng.random((cases, TRIALS)) < p[:, None]
        after = rng.random((cases, TRIALS)) < np.clip(p - drop, 0.0, 1.0)[:, None]
        d = decide_gate(built.run(before), built.run(after), alpha=ALPHA)
        closed += d.state is GateState.CLOSED
        by_test += any(r.startswith("significant regression") for r in d.reasons)
    return closed / pairs, by_test / pairs


def table(pairs: int, seed: int, argv: Sequence[str]) -> str:
    """The markdown table with the command that produced it."""
    rng = np.random.default_rng(seed)
    command = " ".join(["python evals/perf/power_table.py", *argv])
    se = 100 * (0.25 / pairs) ** 0.5
    lines = [
        f"Produced by `{command}`: {pairs} simulated pairs per cell, seed {seed}, "
        f"{TRIALS} trials per case, alpha {ALPHA:g}. Each cell is the share of pairs that "
        "closed the gate, and in brackets the share closed by the paired test alone (the "
        "rest by the previously-green rule). Monte Carlo error: at most "
        f"±{se:.1f} points (one standard error).",
        "",
        "| per-case rates | cases | false alarm (no drop) | drop 5 points | drop 10 points "
        "| drop 20 points |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for spread in (False, True):
        label = f"Beta{BETA} (mean {RATE})" if spread else f"all {RATE}"
        for cases in SIZES:
            cells = []
            for drop in DROPS:
                closed, by_test = simulate(cases, drop, spread, pairs, rng)
                cells.append(f"{closed * 100:.1f}% ({by_test * 100:.1f}%)")
            lines.append(f"| {label} | {cases} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_doc(section: str, path: Path = DOC) -> None:
    """Replace the text between the power-table markers of ``path``."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: markers {START} ... {END} not found")
    path.write_text(text[: start + len(START)] + "\n" + section + text[end:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args_given = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1000, help="simulated pairs per cell")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the generator")
    parser.add_argument("--no-doc", action="store_true", help="print only; leave the doc")
    args = parser.parse_args(args_given)
    shown = [a for a in args_given if a != "--no-doc"]
    began = time.perf_counter()
    section = table(args.pairs, args.seed, shown)
    print(section, end="")
    print(f"({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    if not args.no_doc:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
