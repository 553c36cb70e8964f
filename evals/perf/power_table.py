"""The release gate's false alarms and power, measured by seeded simulation.

Each simulated pair is a baseline run and a current run of one suite (3 trials
per case) under one of three models of per-case pass rates (all 0.93;
Beta(9.3, 0.7); 80% of cases at 0.995 and 20% at 0.7), at 20, 50 and 200
cases.  Every pair goes through ``to_confirm`` and ``decide_gate`` as
``evaltape live --gate`` does, confirmation re-runs included (``gate_sim``).
Healthy pairs draw both runs from the same rates (a close is a false alarm);
the power rows break one random case (rate 0) or lower every case by 5, 10 or
20 points.  The correlated rows add within-case correlation (one case-run rate
shared by a case's trials in a run) and run-level drift (one logit shift per
run).  The chain row plays 30 healthy runs in a row, each compared with the
newest run the gate did not block, as a CI history would (a blocked run never
becomes the baseline, so a lucky baseline can keep blocking).

Seeded per cell: the same arguments give the same tables on any machine, in
any order of cells.  Rewrites the tables between the markers in
docs/statistics.md.

    python evals/perf/power_table.py                 # full tables, update the doc
    python evals/perf/power_table.py --pairs 200 --no-doc
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_sim import (
    ALPHA,
    CONFIRM,
    MODELS,
    TRIALS,
    Attempts,
    Noise,
    broken_current,
    chain,
    dropped,
    simulate_pair,
    wilson_text,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
START = "<!-- power-table:start -->"
END = "<!-- power-table:end -->"
SIZES = (20, 50, 200)
DROPS = (0.05, 0.10, 0.20)
ICC = 0.1
DRIFT = 0.1
CHAIN_RUNS = 30
CHAIN_CASES = 50
SEED = 2026

Cell = tuple[str, int, str, int]
"""(rate model, cases, scenario, pairs)."""


def run_cell(cell: Cell, seed: int) -> tuple[Cell, dict[str, int]]:
    """Simulate one cell; counts of closes, by the test alone, and without confirmation."""
    model, cases, scenario, pairs = cell
    names = list(MODELS)
    scenarios = ["healthy", "broken", "drop5", "drop10", "drop20", "icc", "drift", "chain"]
    rng = np.random.default_rng([seed, names.index(model), cases, scenarios.index(scenario)])
    built = Attempts(cases)
    draw = MODELS[model]
    counts = {"closed": 0, "by_test": 0, "unconfirmed": 0, "n": 0}
    if scenario == "chain":
        for _ in range(pairs):
            p = draw(rng, cases)
            counts["closed"] += chain(built, p, CHAIN_RUNS, rng)
            counts["unconfirmed"] += chain(built, p, CHAIN_RUNS, rng, confirm=0)
            counts["n"] += CHAIN_RUNS
        return cell, counts
    noise = Noise(icc=ICC) if scenario == "icc" else Noise()
    if scenario == "drift":
        noise = Noise(icc=ICC, drift=DRIFT)
    without = scenario in ("healthy", "broken")
    counts["three"] = 0
    for _ in range(pairs):
        p = draw(rng, cases)
        if scenario == "broken":
            after = broken_current(p, rng)
        elif scenario.startswith("drop"):
            after = dropped(p, int(scenario[4:]) / 100)
        else:
            after = p
        state = rng.bit_generator.state
        pair = simulate_pair(built, p, after, rng, noise=noise, without=without)
        counts["closed"] += pair.closed
        counts["by_test"] += pair.by_test
        counts["unconfirmed"] += pair.unconfirmed
        counts["n"] += 1
        if scenario in ("icc", "drift"):  # the same runs, decided with only 3 re-runs
            after_state = rng.bit_generator.state
            rng.bit_generator.state = state
            counts["three"] += simulate_pair(built, p, after, rng, noise=noise, confirm=3).closed
            rng.bit_generator.state = after_state
    return cell, counts


def cells(pairs: int) -> list[Cell]:
    out: list[Cell] = []
    for model in MODELS:
        for cases in SIZES:
            out.append((model, cases, "healthy", pairs))
            out.append((model, cases, "broken", pairs // 2))
            for drop in DROPS:
                out.append((model, cases, f"drop{round(drop * 100)}", pairs // 4))
            out.append((model, cases, "icc", pairs))
            out.append((model, cases, "drift", pairs))
    out.append(("Beta(9.3, 0.7)", CHAIN_CASES, "chain", max(1, pairs // 20)))
    return out


def tables(pairs: int, seed: int, jobs: int, argv: Sequence[str]) -> str:
    todo = cells(pairs)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        done = dict(pool.map(run_cell, todo, [seed] * len(todo)))

    def pct(cell: Cell, key: str = "closed") -> str:
        c = done[cell]
        return wilson_text(c[key], c["n"])

    command = " ".join(["python evals/perf/power_table.py", *argv])
    lines = [
        f"Produced by `{command}`: seed {seed}, {TRIALS} trials per case, "
        f"up to {CONFIRM} confirmation re-runs, alpha {ALPHA:g}; healthy and correlated cells "
        f"{pairs} pairs, one-broken-case cells {pairs // 2}, drop cells {pairs // 4}. "
        "Each cell is the share of pairs that closed the gate with its Wilson 95% interval.",
        "",
        "False alarms (healthy pairs; target at most alpha + 1 point = 6%):",
        "",
        "| per-case rates | cases | gate closes | paired test alone | without confirmation |",
        "|---|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            cell = (model, cases, "healthy", pairs)
            lines.append(
                f"| {model} | {cases} | {pct(cell)} | {pct(cell, 'by_test')} "
                f"| {pct(cell, 'unconfirmed')} |"
            )
    lines += [
        "",
        "Power (share of pairs closed after a real change):",
        "",
        "| per-case rates | cases | one broken case | same, without confirmation "
        "| drop 5 points | drop 10 points | drop 20 points |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            broken = (model, cases, "broken", pairs // 2)
            drops = [pct((model, cases, f"drop{round(d * 100)}", pairs // 4)) for d in DROPS]
            lines.append(
                f"| {model} | {cases} | {pct(broken)} | {pct(broken, 'unconfirmed')} | "
                + " | ".join(drops)
                + " |"
            )
    lines += [
        "",
        f"Correlated trials (healthy pairs): within-case correlation {ICC:g}, then also a "
        f"run-level logit drift of standard deviation {DRIFT:g}:",
        "",
        "| per-case rates | cases | within-case correlation | paired test alone "
        "| with 3 re-runs | plus run-level drift | paired test alone | with 3 re-runs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            icc = (model, cases, "icc", pairs)
            drift = (model, cases, "drift", pairs)
            lines.append(
                f"| {model} | {cases} | {pct(icc)} | {pct(icc, 'by_test')} "
                f"| {pct(icc, 'three')} | {pct(drift)} | {pct(drift, 'by_test')} "
                f"| {pct(drift, 'three')} |"
            )
    chain_cell = ("Beta(9.3, 0.7)", CHAIN_CASES, "chain", max(1, pairs // 20))
    lines += [
        "",
        f"Chains of {CHAIN_RUNS} healthy runs at {CHAIN_CASES} cases (Beta(9.3, 0.7)), each "
        "compared with the newest run the gate did not block: blocked on "
        f"{pct(chain_cell)} of {done[chain_cell]['n']} runs "
        f"({pct(chain_cell, 'unconfirmed')} without confirmation).",
    ]
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000, help="healthy pairs per cell")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the generator")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--no-doc", action="store_true", help="print only; leave the doc")
    args = parser.parse_args(args_given)
    # --jobs and --no-doc do not change the tables (each cell is seeded on its own)
    shown, skip = [], False
    for a in args_given:
        if skip:
            skip = False
        elif a == "--jobs":
            skip = True
        elif a != "--no-doc" and not a.startswith("--jobs="):
            shown.append(a)
    began = time.perf_counter()
    section = tables(args.pairs, args.seed, args.jobs, shown)
    print(section, end="")
    print(f"({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    if not args.no_doc:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
