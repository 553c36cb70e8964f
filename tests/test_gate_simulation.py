"""The gate's honesty, measured: how often it closes on healthy runs, by seeded simulation.

A healthy pair is a baseline and a current run drawn from the same per-case
pass rates.  Closing on one is a false alarm; the gate promises at most
alpha + 1 point of them at every suite size, confirmation re-runs included
(``evals/perf/gate_sim.py``; the full table is docs/statistics.md, from
``evals/perf/power_table.py``).  The generator is seeded, so the measured
rates are the same on every run of the test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals.perf import gate_sim as sim  # noqa: E402
from evaltape.scoring import AttemptResult, GateState, Verdict, decide_gate  # noqa: E402

pytestmark = pytest.mark.slow

CASES = 20
TRIALS = 3
PAIRS = 2000
ALPHA = 0.05

# One attempt value per (case, trial, verdict), reused by every simulated run.
_ATTEMPTS = {
    (i, t, passed): AttemptResult(
        suite="sim",
        case_id=f"case{i:02d}",
        model="m",
        attempt=t,
        verdict=Verdict.PASSED if passed else Verdict.FAILED,
    )
    for i in range(CASES)
    for t in range(TRIALS)
    for passed in (True, False)
}


def attempts(outcomes: np.ndarray) -> list[AttemptResult]:
    return [_ATTEMPTS[(i, t, bool(outcomes[i, t]))] for i in range(CASES) for t in range(TRIALS)]


def closed_share(rates: np.ndarray, drop: float, rng: np.random.Generator) -> float:
    """Share of simulated pairs that close the gate; ``rates`` is (pairs, cases)."""
    closed = 0
    for p in rates:
        before = rng.random((CASES, TRIALS)) < p[:, None]
        after = rng.random((CASES, TRIALS)) < np.clip(p - drop, 0.0, 1.0)[:, None]
        d = decide_gate(attempts(before), attempts(after), alpha=ALPHA, confirm=0)
        closed += d.state is GateState.CLOSED
    return closed / len(rates)


def test_flat_healthy_suite_rarely_closes_the_gate() -> None:
    rng = np.random.default_rng(20260101)
    rates = np.full((PAIRS, CASES), 0.93)
    false_alarms = closed_share(rates, 0.0, rng)
    assert false_alarms <= ALPHA + 0.01


def test_confirmation_keeps_a_large_suite_with_flaky_cases_honest() -> None:
    """200 cases, 20% of them at 0.7: the previously-green rule alone closes about a third
    of healthy runs; with its confirmation re-runs the gate stays within alpha + 1 point."""
    rng = np.random.default_rng(20261201)
    built = sim.Attempts(200)
    pairs = [
        sim.simulate_pair(built, p, p, rng, without=True)
        for p in (sim.mixture(rng, 200) for _ in range(300))
    ]
    closed = sum(x.closed for x in pairs) / len(pairs)
    unconfirmed = sum(x.unconfirmed for x in pairs) / len(pairs)
    assert closed <= ALPHA + 0.01
    assert unconfirmed >= 0.2  # what the confirmation re-runs took away


def test_confirmation_still_catches_one_broken_case_in_200() -> None:
    rng = np.random.default_rng(20261202)
    built = sim.Attempts(200)
    caught = 0
    for _ in range(100):
        p = sim.spread(rng, 200)
        caught += sim.simulate_pair(built, p, sim.broken_current(p, rng), rng).closed
    assert caught >= 80


def test_one_broken_case_among_20_at_093_is_caught() -> None:
    """A case at 0.93 is 3/3 in only 80% of baselines; holding 2/3 baselines to the rule
    too is what catches a broken case in a small suite at least four runs in five."""
    rng = np.random.default_rng(20261203)
    built = sim.Attempts(20)
    p = np.full(20, 0.93)
    caught = sum(
        sim.simulate_pair(built, p, sim.broken_current(p, rng), rng).closed for _ in range(200)
    )
    assert caught >= 170  # about 98% expected: 0.93^3 + 3 * 0.93^2 * 0.07


def test_correlated_trials_do_not_make_the_re_runs_close_healthy_runs() -> None:
    """200 cases, 20% at 0.7, trials correlated 0.1 within a case and run, the re-runs
    included: 3 re-runs closed about 13% of healthy runs; up to 12 keep it near alpha."""
    rng = np.random.default_rng(20261204)
    built = sim.Attempts(200)
    noise = sim.Noise(icc=0.1)
    closed = three = 0
    for _ in range(300):
        p = sim.mixture(rng, 200)
        state = rng.bit_generator.state
        closed += sim.simulate_pair(built, p, p, rng, noise=noise).closed
        rng.bit_generator.state = state  # the same runs, decided with 3 re-runs
        three += sim.simulate_pair(built, p, p, rng, noise=noise, confirm=3).closed
    assert closed / 300 <= ALPHA + 0.01
    assert three > closed


def test_the_simulation_can_see_a_real_regression() -> None:
    """The same machinery closes on most runs after a 40-point drop, so a low rate above is real."""
    rng = np.random.default_rng(20260103)
    rates = np.full((300, CASES), 0.93)
    assert closed_share(rates, 0.40, rng) >= 0.95


def test_history_takes_cases_whose_trials_fail_together_out_of_the_rule() -> None:
    """200 cases with spread rates, no confirmation: a case that failed every trial of one
    of the 5 earlier eligible runs is left to the paired test, so fewer healthy runs close
    on the previously-green rule.  (The bound on false alarms is the re-runs' job.)"""
    cases, history, pairs = 200, 5, 200
    rng = np.random.default_rng(20260104)
    built = sim.Attempts(cases)

    def draw(p: np.ndarray) -> np.ndarray:
        return rng.random((cases, TRIALS)) < p[:, None]

    closed = closed_without_history = 0
    for _ in range(pairs):
        p = rng.beta(9.3, 0.7, size=cases)
        together = np.zeros(cases, dtype=bool)
        for _ in range(history):
            together |= ~draw(p).any(axis=1)
        before, after = built.run(draw(p)), built.run(draw(p))
        flaky = {("sim", f"case{i:03d}") for i in range(cases) if together[i]}
        with_history = decide_gate(before, after, alpha=ALPHA, flaky=flaky, confirm=0)
        without = decide_gate(before, after, alpha=ALPHA, confirm=0)
        assert with_history.state is GateState.OPEN or without.state is GateState.CLOSED
        closed += with_history.state is GateState.CLOSED
        closed_without_history += without.state is GateState.CLOSED
    assert closed_without_history > closed  # the history is what made the difference


def _chain_module():  # type: ignore[no-untyped-def]
    perf = str(ROOT / "evals" / "perf")
    if perf not in sys.path:
        sys.path.insert(0, perf)
    import gate_chain

    return gate_chain


def test_the_power_tables_count_decisions_agree_with_decide_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The power table decides from counts; checked on every decision here, pooled pairs
    and chains with drift, exemptions and re-runs, the project's ``to_confirm`` and
    ``decide_gate`` on the attempt values decide the same."""
    gc = _chain_module()
    monkeypatch.setattr(gc, "CHECK_EVERY", 1)
    rng = np.random.default_rng(20261205)
    table = gc.Table(50)
    noise = sim.Noise(icc=0.1, drift=0.1)
    made = []
    for _ in range(4):
        p = sim.spread(rng, 50)
        made += [g for _, g in gc.chain(table, p, 10, rng, noise, broken_every=3)]
        made.append(gc.pair(table, p, p, rng, noise))
    assert all(g.checked for g in made) and all(g.agreed for g in made)
    assert sum(g.closed for g in made) >= 5 and sum(g.reruns > 0 for g in made) >= 5


def test_pooled_chains_catch_a_broken_case_and_rarely_block_healthy_runs() -> None:
    """Chains with drift, every other run with one case broken for that run: the broken
    runs are blocked and the healthy ones between them are not (a blocked run never joins
    the pool, so the broken runs leave no trace)."""
    gc = _chain_module()
    rng = np.random.default_rng(20261206)
    table = gc.Table(20)
    noise = sim.Noise(icc=0.1, drift=0.1)
    healthy = broken = 0
    for _ in range(10):
        for is_broken, g in gc.chain(table, sim.spread(rng, 20), 10, rng, noise, 2):
            broken += is_broken and g.closed
            healthy += not is_broken and g.closed
    assert broken >= 45  # of 50
    assert healthy <= 5  # of 50
