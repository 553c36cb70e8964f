"""The paired sign-flip permutation test: exact when the work is small, Monte Carlo beyond."""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs

from ._lazy import numpy_module

DEFAULT_SEED = 20240917
"""Seed of the Monte Carlo sign-flip test; fixed so the same data give the same p-value."""

MONTE_CARLO_DRAWS = 200_000
"""Random sign assignments drawn when exact enumeration would be too large."""

EXACT_WORK_LIMIT = 50_000_000
"""Above this many array updates the sign-flip test switches to Monte Carlo."""


class SignFlipMethod(enum.Enum):
    """How the sign-flip test's p-values were obtained."""

    EXACT = "exact"
    """Every one of the 2^n sign assignments counted (by dynamic programming)."""
    MONTE_CARLO = "monte carlo"
    """A fixed-seed sample of sign assignments; deterministic, but an estimate."""


@attrs.frozen(kw_only=True)
class SignFlip:
    """The result of a paired sign-flip permutation test."""

    p_worse: float
    """One-sided: chance of a sum of differences at most the observed one."""
    p_two_sided: float
    """Chance of a sum at least as far from zero as the observed one."""
    nonzero: int
    """Cases whose difference was not zero (the others cannot move the statistic)."""
    method: SignFlipMethod
    """Exact enumeration or Monte Carlo."""


def _as_integers(diffs: Sequence[float | Fraction]) -> list[int]:
    fractions = [
        d if isinstance(d, Fraction) else Fraction(d).limit_denominator(10**4) for d in diffs
    ]
    scale = math.lcm(1, *(f.denominator for f in fractions))
    return [int(f * scale) for f in fractions]


def sign_flip_test(
    diffs: Sequence[float | Fraction], *, seed: int = DEFAULT_SEED, extra_variance: float = 0.0
) -> SignFlip:
    """Paired sign-flip permutation test of per-case differences (current - baseline).

    Under "no change" each case's difference is as likely to have either
    sign, so the observed sum is compared with the sums of all 2^n sign
    assignments.  Differences take few distinct values (with 3 trials a side:
    multiples of 1/3), so the distribution is built exactly by convolving one
    binomial per distinct magnitude; when that would be too much work a
    Monte Carlo sample with ``seed`` stands in.  With one trial a side it is
    exactly McNemar's exact test.

    ``extra_variance`` (a rate squared, >= 0) is variance of the mean difference that the
    signs cannot see: a shift shared by every case of a run (drift between runs).  The
    observed sum is shrunk by ``sqrt(V / (V + extra_variance))``, where ``V`` is the
    sign-flip variance of the mean (``sum(d^2) / n^2``), before it is read off the
    sign-flip distribution: the null distribution widened to the drift's share.
    """
    if not extra_variance >= 0.0:
        raise ValueError(f"extra_variance must be at least 0, got {extra_variance}")
    ints = [x for x in _as_integers(diffs) if x != 0]
    if not ints:
        return SignFlip(p_worse=1.0, p_two_sided=1.0, nonzero=0, method=SignFlipMethod.EXACT)
    observed = sum(ints)
    if extra_variance > 0.0:
        n = len(diffs)
        shared = sum(float(d) ** 2 for d in diffs) / n**2
        observed_f = observed * math.sqrt(shared / (shared + extra_variance))
        return _read_off(ints, observed_f, seed)
    return _read_off(ints, float(observed), seed)


def _read_off(ints: list[int], observed: float, seed: int) -> SignFlip:
    """The p-values of the (possibly shrunk) observed sum ``observed`` of ``ints``."""
    span = sum(abs(x) for x in ints)
    groups = Counter(abs(x) for x in ints)
    work = (2 * span + 1) * sum(m + 1 for m in groups.values())
    if work > EXACT_WORK_LIMIT:
        return _sign_flip_monte_carlo(ints, observed, seed)
    np: Any = numpy_module()
    dist = np.zeros(2 * span + 1)
    dist[span] = 1.0
    for value, m in groups.items():
        weights = [math.comb(m, j) / 2.0**m for j in range(m + 1)]
        new = np.zeros_like(dist)
        for negatives, w in enumerate(weights):
            shift = value * (m - 2 * negatives)
            if shift >= 0:
                new[shift:] += w * dist[: dist.size - shift]
            else:
                new[:shift] += w * dist[-shift:]
        dist = new
    sums = np.arange(-span, span + 1)
    # a tolerance keeps an integer observed sum exactly on its own atom
    p_worse = float(dist[sums <= observed + 1e-9].sum())
    p_two = float(dist[np.abs(sums) >= abs(observed) - 1e-9].sum())
    return SignFlip(
        p_worse=min(1.0, p_worse),
        p_two_sided=min(1.0, p_two),
        nonzero=len(ints),
        method=SignFlipMethod.EXACT,
    )


def _sign_flip_monte_carlo(ints: list[int], observed: float, seed: int) -> SignFlip:
    np: Any = numpy_module()
    rng = np.random.default_rng(seed)
    values = np.array(ints, dtype=np.int64)
    worse = far = 0
    remaining = MONTE_CARLO_DRAWS
    while remaining:
        batch = min(remaining, 10_000)
        signs = rng.integers(0, 2, size=(batch, values.size), dtype=np.int64) * 2 - 1
        sums = signs @ values
        worse += int((sums <= observed + 1e-9).sum())
        far += int((np.abs(sums) >= abs(observed) - 1e-9).sum())
        remaining -= batch
    # Counting the observed assignment itself keeps the estimate a valid p-value.
    n = MONTE_CARLO_DRAWS + 1
    return SignFlip(
        p_worse=(worse + 1) / n,
        p_two_sided=(far + 1) / n,
        nonzero=len(ints),
        method=SignFlipMethod.MONTE_CARLO,
    )
