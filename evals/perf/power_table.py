"""The release gate's false alarms, power and cost, measured by seeded simulation.

The grid is the one issue #39 asks for: 20, 50 and 200 cases (3 trials each)
x three models of per-case pass rates (all 0.93; Beta(9.3, 0.7); 80% of cases
at 0.995 and 20% at 0.7) x three kinds of noise (independent trials; trials
correlated 0.1 within a case and run; that plus a run-level logit drift of
standard deviation 0.1), for pairs and for chains (``gate_chain``):

- a **pair** pools ``POOL_RUNS`` healthy baseline runs and gates one current
  run, healthy (a close is a false alarm) or with one random case broken;
- a **chain** is 30 runs after run zero, every third with one random case
  broken for that run, each gated against the last ``POOL_RUNS`` runs the
  gate did not block, exemptions taken from the simulated gated history: its
  healthy runs measure false alarms, its broken runs power.

Every decision goes through ``to_confirm`` and ``decide_gate`` as
``evaltape live --gate`` makes it, confirmation re-runs included.  The cost is
the confirmation re-runs a run made.  The power-note rows take, per pair, the
drop the gate's own power note names and measure how often a uniform drop of
that size closes the gate.  The design rows compare pool sizes 1 (one
baseline run, as before #39), 3 and 5 on the hardest noise.

Seeded per cell: the same arguments give the same tables on any machine and
in any order of cells.  Rewrites the tables between the markers in
docs/statistics.md.

    nice -n 10 python evals/perf/power_table.py                  # 1,000 runs per cell
    python evals/perf/power_table.py --runs 100 --no-doc         # a quick look
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_chain as gc
from gate_sim import MODELS, Noise, wilson_text

from evaltape.scoring import decide_gate
from evaltape.scoring.results._gate_history import POOL_RUNS
from evaltape.scoring.verdicts._gate import CONFIRM_TRIALS

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
START = "<!-- power-table:start -->"
END = "<!-- power-table:end -->"
SIZES = (20, 50, 200)
NOISES = {
    "independent": Noise(),
    "correlated": Noise(icc=0.1),
    "drift": Noise(icc=0.1, drift=0.1),
}
CHAIN_LENGTH = 30
CHAIN_BROKEN_EVERY = 3
DESIGN_POOLS = (1, 3, 5)
SEED = 2026

Task = tuple[str, int, str, str, int]
"""(rate model, cases, noise, scenario, runs)."""


def _rng(task: Task, seed: int) -> np.random.Generator:
    model, cases, noise, scenario, _ = task
    scenarios = ["pairs", "chains", "note", "design1", "design3", "design5", "dchain1",
                 "dchain3", "dchain5"]  # fmt: skip
    return np.random.default_rng(
        [seed, list(MODELS).index(model), cases, list(NOISES).index(noise),
         scenarios.index(scenario)]
    )  # fmt: skip


def _note_drop(lines: Sequence[str]) -> float | None:
    for line in lines:
        found = re.search(r"detect a drop of ([\d.]+) points", line)
        if found:
            return float(found.group(1)) / 100.0
    return None


def run_task(task: Task, seed: int) -> tuple[Task, dict[str, float]]:
    """Simulate one task; counts of runs, closes, closes by the test, re-runs."""
    model, cases, noise_name, scenario, runs = task
    rng = _rng(task, seed)
    table = gc.Table(cases)
    draw_p = MODELS[model]
    noise = NOISES[noise_name]
    keys = ("h", "h_closed", "h_test", "h_reruns", "b", "b_closed", "b_reruns", "checked", "agreed")
    c = {k: 0.0 for k in keys}

    def count(g: gc.Gated) -> None:
        c["checked"] += g.checked
        c["agreed"] += g.checked and g.agreed

    if scenario == "pairs" or scenario.startswith("design"):
        pool = int(scenario[6:]) if scenario.startswith("design") else POOL_RUNS
        for _ in range(runs):
            p = draw_p(rng, cases)
            g = gc.pair(table, p, p, rng, noise, runs=pool)
            count(g)
            c["h"] += 1
            c["h_closed"] += g.closed
            c["h_test"] += g.by_test
            c["h_reruns"] += g.reruns
            if scenario == "pairs" and c["h"] % 2 == 0:  # one broken pair per two healthy
                after = p.copy()
                after[rng.integers(0, cases)] = 0.0
                g = gc.pair(table, p, after, rng, noise)
                count(g)
                c["b"] += 1
                c["b_closed"] += g.closed
                c["b_reruns"] += g.reruns
    elif scenario == "chains" or scenario.startswith("dchain"):
        pool = int(scenario[6:]) if scenario.startswith("dchain") else POOL_RUNS
        every = CHAIN_BROKEN_EVERY if scenario == "chains" else 0
        length = CHAIN_LENGTH if scenario == "chains" else CHAIN_LENGTH // 3
        healthy = length - (length // every if every else 0)
        for _ in range(max(1, runs // healthy)):
            p = draw_p(rng, cases)
            for broken, g in gc.chain(table, p, length, rng, noise, every, runs=pool):
                count(g)
                k = "b" if broken else "h"
                c[k] += 1
                c[f"{k}_closed"] += g.closed
                c[f"{k}_reruns"] += g.reruns
                if not broken:
                    c["h_test"] += g.by_test
    elif scenario == "note":  # the drop the power note names, then a uniform drop of that size
        drops: list[float] = []
        for _ in range(runs):
            p = draw_p(rng, cases)
            pool = [gc.draw(p, noise, rng)[1] for _ in range(POOL_RUNS)]
            runs_ = [table.run(o) for o in pool]
            _, now = gc.draw(p, noise, rng)
            pooled = [a for run in runs_ for a in run]
            d = decide_gate(pooled, table.run(now), alpha=gc.ALPHA, runs=runs_)
            drop = _note_drop(d.notes)
            if drop is None:
                continue
            drops.append(drop)
            q, outcomes = gc.draw(np.clip(p - drop, 0.0, 1.0), noise, rng)
            g = gc.gate(table, pool, q, outcomes, rng)
            count(g)
            c["h"] += 1
            c["h_closed"] += g.closed
            c["h_test"] += g.by_test
        c["drop"] = statistics.median(drops) if drops else float("nan")
    return task, c


def tasks(runs: int) -> list[Task]:
    out: list[Task] = []
    for model in MODELS:
        for cases in SIZES:
            for noise in NOISES:
                out.append((model, cases, noise, "pairs", runs))
                out.append((model, cases, noise, "chains", runs))
            out.append((model, cases, "independent", "note", max(1, runs // 5)))
        for pool in DESIGN_POOLS:
            out.append((model, 200, "drift", f"design{pool}", max(1, runs // 5)))
            out.append((model, 200, "drift", f"dchain{pool}", max(1, runs // 5)))
    # the slowest first, so two workers finish together
    return sorted(out, key=lambda t: -t[1] * t[4])


def _pct(c: dict[str, float], k: str, of: str) -> str:
    return wilson_text(int(c[k]), int(c[of]))


def render(done: dict[Task, dict[str, float]], runs: int, seed: int, argv: Sequence[str]) -> str:
    def cell(model: str, cases: int, noise: str, scenario: str) -> dict[str, float]:
        return next(v for k, v in done.items() if k[:4] == (model, cases, noise, scenario))

    command = " ".join(["nice -n 10 python evals/perf/power_table.py", *argv])
    lines = [
        f"Produced by `{command}`: seed {seed}, 3 trials per case, baselines pooled from "
        f"{POOL_RUNS} runs, up to {CONFIRM_TRIALS} confirmation re-runs, alpha {gc.ALPHA:g}; "
        f"{runs} healthy runs per cell (pairs: {runs} healthy and {runs // 2} with one broken "
        f"case; chains of {CHAIN_LENGTH} runs after run zero, every {CHAIN_BROKEN_EVERY}rd with "
        f"one broken case: {runs} healthy and {runs // 2} broken runs). "
        "Each cell is the share of runs that closed the gate with its Wilson 95% interval. "
        "Noise: *independent* trials; trials *correlated* 0.1 within a case and run; *drift*: "
        "that plus one logit shift of standard deviation 0.1 per run.",
        "",
        "False alarms (healthy runs; target at most alpha + 1 point = 6%):",
        "",
        "| per-case rates | cases | pairs, independent | pairs, correlated | pairs, drift "
        "| chains, independent | chains, correlated | chains, drift |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            row = [
                _pct(cell(model, cases, n, s), "h_closed", "h")
                for s in ("pairs", "chains")
                for n in NOISES
            ]
            lines.append(f"| {model} | {cases} | " + " | ".join(row) + " |")
    lines += [
        "",
        "One broken case caught (a random case falls to rate 0 in the current run; target at "
        "least 80%):",
        "",
        "| per-case rates | cases | pairs, independent | pairs, correlated | pairs, drift "
        "| chains, independent | chains, correlated | chains, drift |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            row = [
                _pct(cell(model, cases, n, s), "b_closed", "b")
                for s in ("pairs", "chains")
                for n in NOISES
            ]
            lines.append(f"| {model} | {cases} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Cost: confirmation re-runs per run (extra trials beyond the planned 3 per case), mean "
        "over the three kinds of noise, and the most of any one kind in brackets:",
        "",
        "| per-case rates | cases | healthy pair | healthy chain run | broken pair "
        "| broken chain run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            row = []
            for k, s in (("h", "pairs"), ("h", "chains"), ("b", "pairs"), ("b", "chains")):
                per = [
                    cell(model, cases, n, s)[f"{k}_reruns"] / cell(model, cases, n, s)[k]
                    for n in NOISES
                ]
                row.append(f"{sum(per) / len(per):.2f} ({max(per):.2f})")
            lines.append(f"| {model} | {cases} | " + " | ".join(row) + " |")
    lines += [
        "",
        f"The power note against the simulation (independent trials, {max(1, runs // 5)} "
        "pairs per row): the drop the note says is detected with 80% power (median over "
        "the pairs), and how often a uniform drop of that size closed the gate:",
        "",
        "| per-case rates | cases | note's drop (points) | gate closes | paired test alone |",
        "|---|---:|---:|---:|---:|",
    ]
    for model in MODELS:
        for cases in SIZES:
            c = cell(model, cases, "independent", "note")
            lines.append(
                f"| {model} | {cases} | {c['drop'] * 100:.1f} | {_pct(c, 'h_closed', 'h')} "
                f"| {_pct(c, 'h_test', 'h')} |"
            )
    lines += [
        "",
        f"Design: the pool size on the hardest noise (drift), 200 cases, healthy runs only, "
        f"{max(1, runs // 5)} pairs and {max(1, runs // 5)} chain runs per cell (pool 1 is "
        "one baseline run, the gate before #39, with no drift allowance possible):",
        "",
        "| per-case rates | " + " | ".join(
            f"pairs, pool {k} | chains, pool {k}" for k in DESIGN_POOLS
        ) + " |",
        "|---|" + "---:|" * (2 * len(DESIGN_POOLS)),
    ]  # fmt: skip
    for model in MODELS:
        row = []
        for k in DESIGN_POOLS:
            row.append(_pct(cell(model, 200, "drift", f"design{k}"), "h_closed", "h"))
            row.append(_pct(cell(model, 200, "drift", f"dchain{k}"), "h_closed", "h"))
        lines.append(f"| {model} | " + " | ".join(row) + " |")
    checked = sum(v["checked"] for v in done.values())
    agreed = sum(v["agreed"] for v in done.values())
    lines += [
        "",
        f"Checked against the project's own `to_confirm` and `decide_gate` on attempt values "
        f"(one decision in {gc.CHECK_EVERY}): {int(agreed)} of {int(checked)} agreed.",
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
    parser.add_argument("--runs", type=int, default=1000, help="runs per cell")
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
    todo = tasks(args.runs)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        done = dict(pool.map(run_task, todo, [args.seed] * len(todo)))
    section = render(done, args.runs, args.seed, shown)
    print(section, end="")
    print(f"({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    if not args.no_doc:
        write_doc(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
