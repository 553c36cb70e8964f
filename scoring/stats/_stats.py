"""The statistics a comparison or a gate rests on: pure functions over counts.

Trials of one case are not independent draws: a case that is hard stays hard
on every trial.  So everything here works on *per-case* numbers first (how
many of a case's trials passed) and treats the case as the unit of sampling:
the suite rate is the mean of per-case pass rates, its standard error is
clustered by case, and two runs are compared *paired* on the cases they
share.  Counts and probabilities in, floats out; nothing reads a clock or a
global random state (the Monte Carlo fallback takes its seed as an argument).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from ._lazy import scipy_special, scipy_stats

LOW_N_CASES = 10
"""Below this many common cases the unpaired z-test falls back to a points threshold."""

DEFAULT_THRESHOLD_POINTS = 5.0
"""The small-sample fallback: a drop of at least this many points is flagged."""


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return float(scipy_special().ndtri(1.0 - (1.0 - confidence) / 2.0))


def _check_counts(passed: int, total: int) -> None:
    if total < 0 or passed < 0 or passed > total:
        raise ValueError(f"need 0 <= passed <= total, got passed={passed}, total={total}")


# -- single-run rates ------------------------------------------------------------------


def wilson(passed: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion; ``(0.0, 1.0)`` when ``total`` is 0.

    Unlike the textbook ``p ± z·sqrt(p(1-p)/n)`` it never leaves [0, 1] and
    stays honest at 0/n and n/n, which is where eval suites live.
    """
    _check_counts(passed, total)
    z = _z(confidence)
    if total == 0:
        return (0.0, 1.0)
    p = passed / total
    z2 = z * z
    denom = 1.0 + z2 / total
    centre = (p + z2 / (2 * total)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / total + z2 / (4 * total * total))
    return (max(0.0, centre - half), min(1.0, centre + half))


def _rates(per_case: Sequence[tuple[int, int]]) -> list[float]:
    rates = []
    for passed, total in per_case:
        _check_counts(passed, total)
        if total == 0:
            raise ValueError("a case with no trials has no pass rate")
        rates.append(passed / total)
    return rates


def suite_rate(per_case: Sequence[tuple[int, int]]) -> float:
    """The suite's pass rate: the mean of per-case pass rates (each case weighs the same).

    ``per_case`` holds (passed, total) per case.  NaN when there are no cases.
    """
    rates = _rates(per_case)
    return sum(rates) / len(rates) if rates else math.nan


def clustered_se(per_case: Sequence[tuple[int, int]]) -> float:
    """Standard error of ``suite_rate``, clustered by case.

    The per-case rates are the sample: ``sqrt(sum((r_i - mean)^2) / (n (n - 1)))``.
    With the same number of trials in every case this equals the
    cluster-robust standard error of an intercept-only regression on the
    per-trial outcomes, clustered by case (with the usual ``G/(G-1)``
    small-sample factor).  It counts both the spread between cases and the
    noise of each case's own trials.  NaN with fewer than two cases.
    """
    rates = _rates(per_case)
    n = len(rates)
    if n < 2:
        return math.nan
    mean = sum(rates) / n
    return math.sqrt(sum((r - mean) ** 2 for r in rates) / (n * (n - 1)))


def suite_interval(
    per_case: Sequence[tuple[int, int]], confidence: float = 0.95
) -> tuple[float, float]:
    """``suite_rate ± t·clustered_se`` (Student t, n - 1 degrees of freedom), clipped to [0, 1].

    ``(0.0, 1.0)`` with fewer than two cases.
    """
    _z(confidence)
    se = clustered_se(per_case)
    if math.isnan(se):
        return (0.0, 1.0)
    mean = suite_rate(per_case)
    t = float(scipy_special().stdtrit(len(per_case) - 1, 1.0 - (1.0 - confidence) / 2.0))
    return (max(0.0, mean - t * se), min(1.0, mean + t * se))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): chance that at least one of k trials passes.

    Estimated from ``c`` passes in ``n`` trials as ``1 - C(n-c, k) / C(n, k)``.
    Raises ``ValueError`` when ``k > n`` (the estimate needs k trials).
    """
    _check_k(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: chance that all of k trials pass, ``C(c, k) / C(n, k)``.

    This is the reliability number a gate cares about; note it is not
    ``(c/n)^k``, which is biased upward for small n.  Raises ``ValueError``
    when ``k > n``.
    """
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_k(n: int, c: int, k: int) -> None:
    _check_counts(c, n)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > n:
        raise ValueError(f"k={k} needs at least {k} trials, got n={n}")


# -- effect sizes and corrections ------------------------------------------------------


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h, ``2·asin(sqrt(p1)) - 2·asin(sqrt(p2))``: signed, positive when p1 > p2."""
    for p in (p1, p2):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a proportion must be in [0, 1], got {p}")
    return 2.0 * math.asin(math.sqrt(p1)) - 2.0 * math.asin(math.sqrt(p2))


def effect_label(h: float) -> str:
    """Cohen's convention on ``|h|``: negligible < 0.2 <= small < 0.5 <= medium < 0.8 <= large."""
    size = abs(h)
    if size < 0.2:
        return "negligible"
    if size < 0.5:
        return "small"
    if size < 0.8:
        return "medium"
    return "large"


def bh_adjusted(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values, in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Which hypotheses Benjamini-Hochberg rejects at false discovery rate ``alpha``."""
    return [p <= alpha for p in bh_adjusted(pvalues)]


def fisher_exact(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Two-sided Fisher exact test of two (passed, total) counts.

    Sums the hypergeometric probabilities of every table with the same
    margins that is no more likely than the observed one (the usual
    two-sided definition, with a relative tolerance of 1e-7 for ties).
    """
    (a, n1), (c, n2) = before, after
    _check_counts(a, n1)
    _check_counts(c, n2)
    passes = a + c
    whole = math.comb(n1 + n2, passes)
    lo, hi = max(0, passes - n2), min(passes, n1)
    probs = {x: math.comb(n1, x) * math.comb(n2, passes - x) / whole for x in range(lo, hi + 1)}
    observed = probs[a] * (1.0 + 1e-7)
    return min(1.0, sum(p for p in probs.values() if p <= observed))


# -- paired tests ----------------------------------------------------------------------


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test: binomial test of ``b`` in ``b + c`` discordant pairs at 1/2.

    ``b`` pairs passed before and fail now, ``c`` failed before and pass now.
    1.0 when there are no discordant pairs.
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    if b + c == 0:
        return 1.0
    return float(scipy_stats().binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


def mcnemar_worse(b: int, c: int) -> float:
    """One-sided exact McNemar test for "current worse": ``P(X >= b)``, X ~ Binomial(b + c, 1/2)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    if b + c == 0:
        return 1.0
    return float(scipy_stats().binomtest(b, b + c, 0.5, alternative="greater").pvalue)


def paired_t_interval(
    diffs: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of per-case differences with a paired t-interval: (mean, low, high).

    NaN bounds with fewer than two cases; the interval is a point when every
    difference is the same.
    """
    _z(confidence)
    n = len(diffs)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = sum(diffs) / n
    if n < 2:
        return (mean, math.nan, math.nan)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    t = float(scipy_special().stdtrit(n - 1, 1.0 - (1.0 - confidence) / 2.0))
    half = t * sd / math.sqrt(n)
    return (mean, mean - half, mean + half)


# -- unpaired test, shown for comparison -----------------------------------------------


@attrs.frozen(kw_only=True)
class ZTest:
    """The unpaired two-proportion z-test: shown beside the paired test, never decides."""

    z: float
    """(baseline rate - current rate) / pooled standard error; NaN when undefined."""
    p_worse: float
    """One-sided p-value for "current worse"."""
    drop_points: float
    """Baseline rate minus current rate, in percentage points."""
    low_n: bool
    """Fewer than ``LOW_N_CASES`` common cases: the z-test is not informative."""
    threshold_points: float
    """The small-sample rule's threshold."""
    flagged: bool
    """Would this test call a regression: p < alpha, or (low n) drop >= threshold."""


def two_proportion_z(
    baseline: tuple[int, int],
    current: tuple[int, int],
    *,
    cases: int | None = None,
    alpha: float = 0.05,
    threshold_points: float = DEFAULT_THRESHOLD_POINTS,
) -> ZTest:
    """One-sided pooled two-proportion z-test that ``current`` (passed, total) is worse.

    It treats every trial as independent, which trials of one case are not,
    and it ignores the pairing by case; that is why it is only shown for
    comparison.  With fewer than ``LOW_N_CASES`` common ``cases`` (default:
    the smaller trial count, as if every trial were a case) it is not
    informative and the flag follows a plain ``threshold_points`` rule.
    """
    (b_pass, b_total), (c_pass, c_total) = baseline, current
    _check_counts(b_pass, b_total)
    _check_counts(c_pass, c_total)
    if b_total == 0 or c_total == 0:
        raise ValueError("both runs need at least one trial")
    p_b, p_c = b_pass / b_total, c_pass / c_total
    pooled = (b_pass + c_pass) / (b_total + c_total)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / b_total + 1.0 / c_total))
    if se == 0.0:
        z, p = math.nan, 1.0
    else:
        z = (p_b - p_c) / se
        p = float(scipy_special().ndtr(-z))
    drop = (p_b - p_c) * 100.0
    low_n = (min(b_total, c_total) if cases is None else cases) < LOW_N_CASES
    flagged = drop >= threshold_points if low_n else p < alpha
    return ZTest(
        z=z,
        p_worse=p,
        drop_points=drop,
        low_n=low_n,
        threshold_points=threshold_points,
        flagged=flagged,
    )
