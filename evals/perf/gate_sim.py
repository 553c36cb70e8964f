"""Simulated runs for measuring the release gate: rate models, trials, confirmation re-runs.

Shared by ``power_table.py`` (the full table in docs/statistics.md) and the
seeded test in tests/test_gate_simulation.py.  A simulated pair is a baseline
run and a current run of one suite; every pair goes through ``to_confirm`` and
``decide_gate`` exactly as ``evaltape live --gate`` does: the cases the
previously-green rule would block on get ``confirm`` more trials drawn from
the current run's rates, marked as confirmation re-runs.  They are drawn all at
once: the run stops re-running a case at its first pass, which changes how many
re-runs it costs but never the decision (one pass keeps a case from closing).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from evaltape.scoring import AttemptResult, GateState, Verdict, decide_gate
from evaltape.scoring.verdicts._gate import CONFIRM_TRIALS
from evaltape.scoring.verdicts._gate_green import to_confirm

TRIALS = 3
CONFIRM = CONFIRM_TRIALS
ALPHA = 0.05

RateModel = Callable[[np.random.Generator, int], np.ndarray]
"""Draws the true per-case pass rates of one suite."""


def flat(rng: np.random.Generator, cases: int) -> np.ndarray:
    """Every case at 0.93."""
    return np.full(cases, 0.93)


def spread(rng: np.random.Generator, cases: int) -> np.ndarray:
    """Rates from Beta(9.3, 0.7): mean 0.93, most cases near 1, a few coin-flippy."""
    return rng.beta(9.3, 0.7, size=cases)


def mixture(rng: np.random.Generator, cases: int) -> np.ndarray:
    """80% of cases at 0.995, 20% at 0.7 (which ones is drawn per suite)."""
    return np.where(rng.random(cases) < 0.8, 0.995, 0.7)


MODELS: dict[str, RateModel] = {
    "all 0.93": flat,
    "Beta(9.3, 0.7)": spread,
    "80% at 0.995, 20% at 0.7": mixture,
}


@attrs.frozen(kw_only=True)
class Noise:
    """How a run's trials deviate from independent draws at the case's true rate."""

    icc: float = 0.0
    """Within-case correlation: one case-run rate from a Beta around the true rate, shared
    by that case's trials in that run (its confirmation re-runs included)."""
    drift: float = 0.0
    """Run-level drift: standard deviation of one logit shift shared by a run's cases."""


def run_rates(p: np.ndarray, noise: Noise, rng: np.random.Generator) -> np.ndarray:
    """The rates one run's trials are drawn at."""
    q = np.clip(p, 1e-9, 1 - 1e-9)
    if noise.drift:
        logit = np.log(q / (1 - q)) + rng.normal(0.0, noise.drift)
        q = 1 / (1 + np.exp(-logit))
    if noise.icc:
        k = (1 - noise.icc) / noise.icc
        q = rng.beta(q * k, (1 - q) * k)
    return np.where(p <= 0.0, 0.0, np.where(p >= 1.0, 1.0, q))


class Attempts:
    """Prebuilt attempt values, one per (case, attempt index, verdict), shared by every run."""

    def __init__(self, cases: int) -> None:
        self.cases = cases
        self.table = {
            (i, t, passed): AttemptResult(
                suite="sim",
                case_id=f"case{i:03d}",
                model="m",
                attempt=t,
                verdict=Verdict.PASSED if passed else Verdict.FAILED,
                confirmation=t >= TRIALS,
            )
            for i in range(cases)
            for t in range(TRIALS + CONFIRM)
            for passed in (True, False)
        }

    def run(self, outcomes: np.ndarray) -> list[AttemptResult]:
        """The planned attempts of a run whose (case, trial) outcomes are ``outcomes``."""
        return [
            self.table[(i, t, bool(outcomes[i, t]))]
            for i in range(self.cases)
            for t in range(outcomes.shape[1])
        ]

    def again(self, case: int, outcomes: np.ndarray) -> list[AttemptResult]:
        """One case's confirmation re-runs."""
        return [self.table[(case, TRIALS + t, bool(x))] for t, x in enumerate(outcomes)]


@attrs.frozen(kw_only=True)
class Pair:
    """One simulated pair's decisions."""

    closed: bool
    """The gate closed (with confirmation re-runs)."""
    by_test: bool
    """The paired test alone closed it."""
    unconfirmed: bool
    """It would have closed without confirmation (``confirm=0``)."""


def decide(
    built: Attempts,
    before: list[AttemptResult],
    now_q: np.ndarray,
    rng: np.random.Generator,
    *,
    confirm: int = CONFIRM,
    without: bool = False,
) -> tuple[Pair, list[AttemptResult]]:
    """Draw a current run at rates ``now_q`` and decide it against ``before`` as the gate
    does, confirmation re-runs drawn at the same rates; (decision, the current run's planned
    attempts).  ``without`` also decides with no confirmation (for the comparison)."""
    now = built.run(rng.random((built.cases, TRIALS)) < now_q[:, None])
    extra: list[AttemptResult] = []
    if confirm:
        for _, case_id in to_confirm(before, now):
            i = int(case_id[4:])
            extra.extend(built.again(i, rng.random(confirm) < now_q[i]))
    d = decide_gate(before, now + extra, alpha=ALPHA, confirm=confirm)
    closed = d.state is GateState.CLOSED
    by_test = any(r.startswith("significant regression") for r in d.reasons)
    unconfirmed = closed
    if without:
        plain = decide_gate(before, now, alpha=ALPHA, confirm=0)
        unconfirmed = plain.state is GateState.CLOSED
    return Pair(closed=closed, by_test=by_test, unconfirmed=unconfirmed), now


def simulate_pair(
    built: Attempts,
    p: np.ndarray,
    after_p: np.ndarray,
    rng: np.random.Generator,
    *,
    noise: Noise = Noise(),
    confirm: int = CONFIRM,
    without: bool = False,
) -> Pair:
    """Draw a baseline at ``p`` and a current run at ``after_p``; decide as the gate does."""
    before_q = run_rates(p, noise, rng)
    before = built.run(rng.random((built.cases, TRIALS)) < before_q[:, None])
    pair, _ = decide(
        built, before, run_rates(after_p, noise, rng), rng, confirm=confirm, without=without
    )
    return pair


def chain(
    built: Attempts, p: np.ndarray, runs: int, rng: np.random.Generator, *, confirm: int = CONFIRM
) -> int:
    """``runs`` healthy runs in a row, as CI history makes them: each is compared with the
    newest run the gate did not block (a blocked run never becomes the baseline).
    Returns how many were blocked."""
    baseline = built.run(rng.random((built.cases, TRIALS)) < p[:, None])
    blocked = 0
    for _ in range(runs):
        pair, now = decide(built, baseline, p, rng, confirm=confirm)
        if pair.closed:
            blocked += 1
        else:
            baseline = now
    return blocked


def broken_current(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The current run's rates with one case, drawn at random, broken (rate 0)."""
    after = p.copy()
    after[rng.integers(0, len(p))] = 0.0
    return after


def dropped(p: np.ndarray, drop: float) -> np.ndarray:
    """Every case ``drop`` lower, clipped at 0."""
    return np.clip(p - drop, 0.0, 1.0)


def wilson_text(hits: int, n: int) -> str:
    """``4.1% (3.3-5.1)``: the share and its Wilson 95% interval."""
    from evaltape.scoring.stats import wilson

    low, high = wilson(hits, n)
    return f"{hits / n * 100:.1f}% ({low * 100:.1f}-{high * 100:.1f})"
