"""A-priori power of the gate's paired test, planned from the baseline's per-case rates.

Post-hoc power (the power to see the drop that was observed) only restates
the p-value: every non-significant drop is "underpowered".  What a reader can
act on is the drop a suite of this size and trial count can detect before
anything is observed, and how many cases a chosen drop needs.  Both come from
the baseline's per-case rates: a uniform drop of ``d`` moves case ``i`` from
``p_i`` to ``q_i = max(p_i - d, 0)``; its difference of per-case rates over
``k`` trials a side has mean ``p_i - q_i`` and variance
``(p_i(1-p_i) + q_i(1-q_i)) / k``; the one-sided paired test then has power
``Phi(mean·sqrt(n)/sd - z_(1-alpha))`` (a normal approximation of the exact
test, which is slightly more conservative at small ``n``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from ._lazy import scipy_special
from ._power import cases_needed

MAX_PLANNED_CASES = 1_000_000
"""Above this many cases a drop is reported as out of reach."""


@attrs.frozen(kw_only=True)
class PowerPlan:
    """What a paired comparison of this size can detect, planned before looking at results."""

    cases: int
    """Cases compared."""
    trials: int
    """Trials per case on each side."""
    alpha: float
    """One-sided significance level."""
    power: float
    """The power asked for (0.8: four runs in five catch the drop)."""
    detectable_points: float
    """The smallest uniform drop, in points, detected with ``power``; NaN when no drop is."""
    drop_points: float
    """The drop the plan was asked about, in points."""
    cases_needed: int | None
    """Cases (at ``trials`` trials) needed to detect ``drop_points``; None when out of reach."""


def shrunk_rates(counts: Sequence[tuple[int, int]]) -> list[float]:
    """Per-case rates ``(passed + 0.5) / (total + 1)``: never exactly 0 or 1, so a case that
    passed every trial still has the variance a drop would show."""
    return [(p + 0.5) / (t + 1) for p, t in counts]


def _moments(
    rates: Sequence[float], trials: int, drop: float, runs: int = 1
) -> tuple[float, float]:
    """Mean and standard deviation of one case's rate difference under a uniform ``drop``;
    the baseline side pools ``runs`` runs of ``trials`` trials."""
    after = [max(p - drop, 0.0) for p in rates]
    mean = sum(p - q for p, q in zip(rates, after, strict=True)) / len(rates)
    var = sum(p * (1 - p) / runs + q * (1 - q) for p, q in zip(rates, after, strict=True))
    return mean, math.sqrt(var / len(rates) / trials)


def planned_power(
    rates: Sequence[float], trials: int, drop: float, *, cases: int | None = None,
    alpha: float = 0.05, runs: int = 1, extra: float = 0.0,
) -> float:  # fmt: skip
    """Power of the one-sided paired test against a uniform ``drop`` (a rate) of ``rates``.

    ``cases`` defaults to ``len(rates)``; the rates are read as a sample of the suite's cases.
    ``runs`` baseline runs are pooled; ``extra`` is the variance (rate squared) the test
    adds to its null for drift (``stats.run_variance``), which raises the bar a drop must
    clear: power ``Phi((drop - z·sqrt(V + extra)) / sqrt(V))`` with ``V = sd^2 / n``.
    """
    if not rates:
        raise ValueError("need at least one case rate")
    if trials < 1:
        raise ValueError("trials must be at least 1")
    n = len(rates) if cases is None else cases
    mean, sd = _moments(rates, trials, drop, max(1, runs))
    if mean <= 0.0 or sd <= 0.0:
        return alpha if mean <= 0.0 else 1.0
    z_a = float(scipy_special().ndtri(1.0 - alpha))
    v = sd * sd / n
    return float(scipy_special().ndtr((mean - z_a * math.sqrt(v + max(0.0, extra))) / math.sqrt(v)))


def plan_power(
    rates: Sequence[float], trials: int, *, alpha: float = 0.05, power: float = 0.8,
    drop: float = 0.05, runs: int = 1, extra: float = 0.0,
) -> PowerPlan:  # fmt: skip
    """The detectable drop at this size and the cases a ``drop`` (a rate) needs.

    ``rates`` are the baseline's per-case rates (``shrunk_rates`` of its counts), pooled
    over ``runs`` runs; ``extra`` is the drift variance the test allows for.  The cases
    needed are planned without ``extra`` (a drift does not shrink with more cases).
    """
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be between 0 and 1, got {power}")
    if not 0.0 < drop <= 1.0:
        raise ValueError(f"the planned drop must be above 0 and at most 1, got {drop}")
    top = max(rates, default=0.0)
    detectable = math.nan
    if planned_power(rates, trials, top, alpha=alpha, runs=runs, extra=extra) >= power:
        low, high = 0.0, top
        for _ in range(50):  # bisection to well under 0.01 points
            mid = (low + high) / 2
            if planned_power(rates, trials, mid, alpha=alpha, runs=runs, extra=extra) >= power:
                high = mid
            else:
                low = mid
        detectable = high * 100.0
    mean, sd = _moments(rates, trials, drop, max(1, runs))
    needed: int | None = None
    if mean > 0.0 and sd > 0.0:
        n = cases_needed(mean, sd, alpha=alpha, power=power)
        needed = n if n <= MAX_PLANNED_CASES else None
    return PowerPlan(
        cases=len(rates),
        trials=trials,
        alpha=alpha,
        power=power,
        detectable_points=detectable,
        drop_points=drop * 100.0,
        cases_needed=needed,
    )
