"""Simulated gated runs as ``evaltape live --gate`` makes them: pooled baselines and chains.

Shared by ``power_table.py`` (the tables in docs/statistics.md) and the seeded
tests in tests/test_gate_simulation.py.  Decisions are made from
counts through the project's own statistics (``sign_flip_test`` with the
drift allowance ``run_variance`` gives, as ``compare`` calls them), the
previously-green rule's candidates as ``green_in`` and ``to_confirm`` name
them, re-runs drawn ``CONFIRM_ROUND`` at a time stopping at a case's first
passing round, and the exemptions the project's own
``results._gate_history.exemptions`` finds in the simulated history (gated
runs recorded as ``RunRecord`` values with their ``GateInputs``, read by
``evidence_run``).  Building attempt values and comparing them costs about
20 times more than the counts, so one decision in ``CHECK_EVERY`` is also made
by ``to_confirm`` and ``decide_gate`` on the attempt values, exactly as
``evaltape live --gate`` makes it, and the tables say how many agreed.

A **pair** is ``POOL_RUNS`` baseline runs and one current run of the same
suite.  A **chain** starts from run zero and gates every later run against
the last ``POOL_RUNS`` runs the gate did not block, as a CI history would.
"""

from __future__ import annotations

from fractions import Fraction

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
from evaltape.scoring.stats import run_variance, sign_flip_test
from evaltape.scoring.verdicts._gate import CONFIRM_TRIALS
from evaltape.scoring.verdicts._gate_green import CONFIRM_ROUND, GREEN_SLACK, to_confirm

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
    outcomes: np.ndarray
    """Its planned (case, trial) outcomes."""
    exempt: tuple[tuple[str, str, str], ...] = ()
    """(suite, case, evidence run) of the exemptions it used."""
    checked: bool = False
    """The decision was also made by ``to_confirm`` and ``decide_gate`` on the attempts."""
    agreed: bool = True
    """... and both agreed (cases to confirm and the state)."""


CHECK_EVERY = 20
"""One decision in this many is also made by the project's own ``to_confirm`` and
``decide_gate`` on the attempt values, and the two must agree."""

_counter = [0]


def draw(p: np.ndarray, noise: Noise, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the run's rates, its planned outcomes)."""
    q = run_rates(p, noise, rng)
    return q, rng.random((len(p), TRIALS)) < q[:, None]


def _reruns(
    table: Table, cases: list[int], q: np.ndarray, rng: np.random.Generator
) -> dict[int, list[AttemptResult]]:
    """The confirmation re-runs of ``cases`` at the run's rates, round by round, stopping at
    a case's first passing round, as ``confirm_in_rounds`` makes them."""
    out: dict[int, list[AttemptResult]] = {}
    for i in cases:
        mine = out.setdefault(i, [])
        for start in range(0, CONFIRM_TRIALS, CONFIRM_ROUND):
            n = min(CONFIRM_ROUND, CONFIRM_TRIALS - start)
            chunk = rng.random(n) < q[i]
            mine.extend(table.table[(i, TRIALS + start + t, bool(x))] for t, x in enumerate(chunk))
            if chunk.any():
                break
    return out


def held_cases(pool: np.ndarray, now: np.ndarray, flaky: set[int]) -> list[int]:
    """The previously-green rule's candidates, from counts: no planned pass now, (nearly)
    green in one pooled run (``green_in``), not exempt."""
    nearly = (pool >= max(1, TRIALS - GREEN_SLACK)).any(axis=0)
    return [int(i) for i in np.flatnonzero((now == 0) & nearly) if int(i) not in flaky]


def paired_p(pool: np.ndarray, now: np.ndarray) -> tuple[float, bool]:
    """(one-sided p, effect below zero) of the gate's paired test from counts, through the
    project's ``sign_flip_test`` and ``run_variance`` as ``compare`` calls them."""
    k = pool.shape[0]
    total = pool.sum(axis=0)
    scaled = [int(c) * k - int(b) for c, b in zip(now, total, strict=True)]
    diffs = [Fraction(x, k * TRIALS) for x in scaled]
    extra = run_variance((pool / TRIALS).tolist()) * (1.0 + 1.0 / k) if k > 1 else 0.0
    return sign_flip_test(diffs, extra_variance=extra).p_worse, sum(scaled) < 0


def gate(
    table: Table,
    pool: list[np.ndarray],
    q: np.ndarray,
    outcomes: np.ndarray,
    rng: np.random.Generator,
    history: tuple[Prior, ...] = (),
) -> Gated:
    """Gate one run (rates ``q``, planned ``outcomes``) against the ``pool`` of baseline runs'
    outcomes (newest first), with the exemptions ``history`` (gated runs, newest first)
    grants.  Decided from counts; every ``CHECK_EVERY``-th also by ``decide_gate``."""
    counts = np.array([o.sum(axis=1) for o in pool])
    now = outcomes.sum(axis=1)
    found = exemptions(history, MODEL, table.fingerprints) if history else ()
    flaky = {int(e.case_id[4:]) for e in found}
    held = held_cases(counts, now, flaky)
    again = _reruns(table, held, q, rng)
    confirmed = any(not any(a.verdict is Verdict.PASSED for a in again[i]) for i in held)
    p_worse, lower = paired_p(counts, now)
    by_test = p_worse <= ALPHA and lower
    closed = by_test or confirmed
    extra = [a for i in held for a in again[i]]
    current = table.run(outcomes)
    _counter[0] += 1
    checked, agreed = _counter[0] % CHECK_EVERY == 0, True
    if checked:
        runs = [table.run(o) for o in pool]
        pooled = [a for run in runs for a in run]
        keys = {(e.suite, e.case_id) for e in found}
        named = to_confirm(pooled, current, flaky=keys, runs=runs)
        d = decide_gate(
            pooled, current + extra, alpha=ALPHA, flaky=keys, confirm=CONFIRM_TRIALS, runs=runs
        )
        agreed = [int(c[4:]) for _, c in named] == held and (
            (d.state is GateState.CLOSED) == closed
        )
    return Gated(
        closed=closed,
        by_test=by_test,
        reruns=len(extra),
        state=GateState.CLOSED if closed else GateState.OPEN,
        attempts=tuple(current + extra),
        outcomes=outcomes,
        exempt=tuple((e.suite, e.case_id, e.run_id) for e in found),
        checked=checked,
        agreed=agreed,
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
    pool = [draw(p, noise, rng)[1] for _ in range(runs)]
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
    first = draw(p, noise, rng)[1]
    zero = Gated(closed=False, by_test=False, reruns=0, state=GateState.RUN_ZERO,
                 attempts=tuple(table.run(first)), outcomes=first)  # fmt: skip
    history: list[tuple[Prior, Gated]] = [(_record(0, zero), zero)]
    out: list[tuple[bool, Gated]] = []
    for n in range(1, length + 1):
        broken = bool(broken_every) and n % broken_every == 0
        rates = p.copy()
        if broken:
            rates[rng.integers(0, len(p))] = 0.0
        eligible = [h for h in reversed(history) if not h[1].closed]
        pool = [g.outcomes for _, g in eligible[:runs]]
        gated = tuple(prior for prior, _ in eligible if evidence_run(prior.record))
        q, outcomes = draw(rates, noise, rng)
        g = gate(table, pool, q, outcomes, rng, gated[:EXEMPT_WINDOW])
        history.append((_record(n, g), g))
        out.append((broken, g))
    return out
