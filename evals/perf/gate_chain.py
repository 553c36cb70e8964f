"""Simulated gated runs as ``evaltape live --gate`` makes them: pooled baselines and chains.

Shared by ``power_table.py`` (the tables in docs/statistics.md) and the seeded
tests in tests/test_gate_simulation.py.  Every decision goes through the
project's own code, as a live run does: ``to_confirm`` names the cases to
re-run, the re-runs are drawn ``CONFIRM_ROUND`` at a time and stop at a
case's first passing round, and ``decide_gate`` decides with the pooled
baseline runs and the exemptions ``results._gate_history.exemptions`` finds in
the simulated history (gated runs recorded as ``RunRecord`` values with their
``GateInputs``, read by ``evidence_run``).

A **pair** is ``POOL_RUNS`` baseline runs and one current run of the same
suite.  A **chain** starts from run zero and gates every later run against
the last ``POOL_RUNS`` runs the gate did not block, as a CI history would.
"""

from __future__ import annotations

import attrs
import numpy as np
from gate_sim import Noise, run_rates

from evaltape.scoring import AttemptResult, GateState, Verdict, decide_gate
from evaltape.scoring.results._baselines import Prior
from evaltape.scoring.results._gate_history import (
    EXEMPT_WINDOW,
    POOL_RUNS,
    evidence_run,
    exemptions,
)
from evaltape.scoring.results._records import (
    Exemption,
    GateInputs,
    RunKind,
    RunRecord,
    RunState,
)
from evaltape.scoring.verdicts._gate import CONFIRM_TRIALS
from evaltape.scoring.verdicts._gate_green import CONFIRM_ROUND, to_confirm

TRIALS = 3
ALPHA = 0.05
MODEL = "m"
NO_NOISE = Noise()


class Table:
    """Prebuilt attempt values, one per (case, attempt index, verdict), shared by every run."""

    def __init__(self, cases: int) -> None:
        self.cases = cases
        self.keys = [("sim", f"case{i:03d}") for i in range(cases)]
        self.fingerprints = {k: "v1" for k in self.keys}
        self.table = {
            (i, t, passed): AttemptResult(
                suite="sim",
                case_id=self.keys[i][1],
                model=MODEL,
                attempt=t,
                verdict=Verdict.PASSED if passed else Verdict.FAILED,
                confirmation=t >= TRIALS,
                fingerprint="v1",
            )
            for i in range(cases)
            for t in range(TRIALS + CONFIRM_TRIALS)
            for passed in (True, False)
        }

    def run(self, outcomes: np.ndarray) -> list[AttemptResult]:
        """The planned attempts of a run whose (case, trial) outcomes are ``outcomes``."""
        return [
            self.table[(i, t, bool(outcomes[i, t]))]
            for i in range(self.cases)
            for t in range(TRIALS)
        ]


@attrs.frozen(kw_only=True)
class Gated:
    """One simulated gated run."""

    closed: bool
    """The gate closed."""
    by_test: bool
    """The paired test was among the reasons."""
    reruns: int
    """Confirmation re-runs the run made."""
    state: GateState
    """The decision."""
    attempts: tuple[AttemptResult, ...]
    """Its attempts, re-runs included (what the run record keeps)."""
    exempt: tuple[tuple[str, str, str], ...] = ()
    """(suite, case, evidence run) of the exemptions it used."""


def draw(p: np.ndarray, noise: Noise, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the run's rates, its planned outcomes)."""
    q = run_rates(p, noise, rng)
    return q, rng.random((len(p), TRIALS)) < q[:, None]


def _reruns(
    table: Table, keys: tuple[tuple[str, str], ...], q: np.ndarray, rng: np.random.Generator
) -> list[AttemptResult]:
    """The confirmation re-runs of ``keys`` at the run's rates, round by round."""
    out: list[AttemptResult] = []
    for _, case_id in keys:
        i = int(case_id[4:])
        for start in range(0, CONFIRM_TRIALS, CONFIRM_ROUND):
            n = min(CONFIRM_ROUND, CONFIRM_TRIALS - start)
            chunk = rng.random(n) < q[i]
            out.extend(table.table[(i, TRIALS + start + t, bool(x))] for t, x in enumerate(chunk))
            if chunk.any():
                break
    return out


def gate(
    table: Table,
    pool: list[list[AttemptResult]] | list[tuple[AttemptResult, ...]],
    q: np.ndarray,
    outcomes: np.ndarray,
    rng: np.random.Generator,
    history: tuple[Prior, ...] = (),
) -> Gated:
    """Gate one run (rates ``q``, planned ``outcomes``) against the ``pool`` of baseline runs
    (newest first), with the exemptions ``history`` (gated runs, newest first) grants."""
    current = table.run(outcomes)
    found = exemptions(history, MODEL, table.fingerprints) if history else ()
    flaky = {(e.suite, e.case_id) for e in found}
    pooled = [a for run in pool for a in run]
    keys: tuple[tuple[str, str], ...] = ()
    if (~outcomes.any(axis=1)).any():  # to_confirm names only cases with no pass now
        keys = to_confirm(pooled, current, flaky=flaky, runs=pool)
    extra = _reruns(table, keys, q, rng)
    d = decide_gate(
        pooled, current + extra, alpha=ALPHA, flaky=flaky, confirm=CONFIRM_TRIALS, runs=pool
    )
    return Gated(
        closed=d.state is GateState.CLOSED,
        by_test=any(r.startswith("significant regression") for r in d.reasons),
        reruns=len(extra),
        state=d.state,
        attempts=tuple(current + extra),
        exempt=tuple((e.suite, e.case_id, e.run_id) for e in found),
    )


def pair(
    table: Table,
    p: np.ndarray,
    after: np.ndarray,
    rng: np.random.Generator,
    noise: Noise = NO_NOISE,
    runs: int = POOL_RUNS,
) -> Gated:
    """``runs`` baseline runs at ``p`` and a current run at ``after``, gated as live does."""
    pool = [table.run(draw(p, noise, rng)[1]) for _ in range(runs)]
    q, outcomes = draw(after, noise, rng)
    return gate(table, pool, q, outcomes, rng)


def _record(n: int, g: Gated) -> Prior:
    inputs = GateInputs(
        model=MODEL,
        decision=g.state.value,
        exemptions=tuple(
            Exemption(suite=suite, case_id=case, run_id=run) for suite, case, run in g.exempt
        ),
    )
    record = RunRecord(
        run_id=f"r{n:05d}",
        kind=RunKind.LIVE,
        state=RunState.COMPLETED,
        started_at=float(n),
        models=(MODEL,),
        trials=TRIALS,
        purpose="gate",
        gate=g.state.value,
        gate_blocked=g.closed,
        gate_inputs=(inputs,),
    )
    return Prior(record=record, attempts=g.attempts)


def chain(
    table: Table,
    p: np.ndarray,
    length: int,
    rng: np.random.Generator,
    noise: Noise = NO_NOISE,
    broken_every: int = 0,
    runs: int = POOL_RUNS,
) -> list[tuple[bool, Gated]]:
    """Run zero, then ``length`` gated runs; with ``broken_every`` k, every k-th run has one
    random case broken (rate 0) for that run only.  Each run is gated against the last
    ``runs`` runs the gate did not block; the exemptions come from the gated history.
    Returns (broken, gated) per run after run zero."""
    zero = table.run(draw(p, noise, rng)[1])
    history: list[Prior] = [
        _record(0, Gated(closed=False, by_test=False, reruns=0, state=GateState.RUN_ZERO,
                         attempts=tuple(zero)))
    ]  # fmt: skip
    out: list[tuple[bool, Gated]] = []
    for n in range(1, length + 1):
        broken = bool(broken_every) and n % broken_every == 0
        rates = p.copy()
        if broken:
            rates[rng.integers(0, len(p))] = 0.0
        eligible = [h for h in reversed(history) if not h.record.gate_blocked]
        pool = [h.attempts for h in eligible[:runs]]
        gated = tuple(h for h in eligible if evidence_run(h.record))[:EXEMPT_WINDOW]
        q, outcomes = draw(rates, noise, rng)
        g = gate(table, pool, q, outcomes, rng, gated)
        history.append(_record(n, g))
        out.append((broken, g))
    return out
