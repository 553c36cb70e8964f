"""Statistical power: how many cases a paired comparison needs to see a given difference."""

from __future__ import annotations

import math

from ._lazy import scipy_special


def binomial_diff_sd(baseline_rate: float, current_rate: float, trials: int) -> float:
    """Standard deviation of one case's rate difference when both rates are known and equal
    across cases: ``sqrt(pb(1-pb)/t + pc(1-pc)/t)``.  A planning value when no data exist."""
    if trials < 1:
        raise ValueError("trials must be at least 1")
    return math.sqrt(
        (baseline_rate * (1 - baseline_rate) + current_rate * (1 - current_rate)) / trials
    )


def paired_power(drop: float, sd: float, cases: int, *, alpha: float = 0.05) -> float:
    """Approximate power of a one-sided paired test to see a mean drop of ``drop`` (a rate).

    Normal approximation: ``Phi(|drop|·sqrt(n)/sd - z_(1-alpha))``.
    """
    if cases < 1:
        raise ValueError("need at least one case")
    if sd <= 0.0:
        raise ValueError("the standard deviation of differences must be positive")
    z_a = float(scipy_special().ndtri(1.0 - alpha))
    return float(scipy_special().ndtr(abs(drop) * math.sqrt(cases) / sd - z_a))


def cases_needed(drop: float, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Cases a one-sided paired test needs to detect a mean per-case drop of ``drop``.

    ``drop`` is a rate (0.05 = 5 points), ``sd`` the standard deviation of
    per-case differences (observed, or ``binomial_diff_sd`` for planning).
    Normal approximation ``((z_(1-alpha) + z_power)·sd / drop)^2``, rounded up.
    """
    if drop == 0.0:
        raise ValueError("a drop of zero cannot be detected")
    if sd <= 0.0:
        raise ValueError("the standard deviation of differences must be positive")
    z_a = float(scipy_special().ndtri(1.0 - alpha))
    z_b = float(scipy_special().ndtri(power))
    return max(2, math.ceil(((z_a + z_b) * sd / abs(drop)) ** 2))
