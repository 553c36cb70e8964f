"""The statistics module, each formula against an independent computation.

statsmodels (test-only) supplies Wilson intervals, McNemar's exact test,
Benjamini-Hochberg, the pooled z-test and a cluster-robust regression;
pass@k, pass^k and the sign-flip test are checked by brute-force enumeration.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from evaltape.scoring.stats import (
    mcnemar_exact,
    pass_at_k,
    pass_hat_k,
    run_variance,
    sign_flip_test,
    wilson,
)
from evaltape.scoring.stats._power import binomial_diff_sd, cases_needed, paired_power
from evaltape.scoring.stats._signflip import MONTE_CARLO_DRAWS, SignFlipMethod
from evaltape.scoring.stats._stats import (
    benjamini_hochberg,
    bh_adjusted,
    clustered_se,
    cohens_h,
    effect_label,
    fisher_exact,
    mcnemar_worse,
    paired_t_interval,
    suite_interval,
    suite_rate,
    two_proportion_z,
)

COUNTS = [(0, 1), (1, 1), (0, 10), (10, 10), (3, 7), (17, 20), (93, 100), (1, 1000)]


@pytest.mark.parametrize(("passed", "total"), COUNTS)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(passed: int, total: int, confidence: float) -> None:
    expected = proportion_confint(passed, total, alpha=1 - confidence, method="wilson")
    assert wilson(passed, total, confidence) == pytest.approx(expected, abs=1e-12)


def test_wilson_edges() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(20, 20)
    assert high == 1.0 and 0.8 < low < 1.0
    with pytest.raises(ValueError, match="passed <= total"):
        wilson(3, 2)
    with pytest.raises(ValueError, match="confidence"):
        wilson(1, 2, confidence=1.5)


def _brute_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Share of k-subsets of n trials (c of them passing) with at least one pass."""
    trials = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(trials[i] for i in s) for s in subsets), len(subsets))


def _brute_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    trials = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(all(trials[i] for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_pass_at_k_and_pass_hat_k_equal_enumeration_over_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(_brute_pass_at_k(n, c, k)))
            assert pass_hat_k(n, c, k) == pytest.approx(float(_brute_pass_hat_k(n, c, k)))


def test_pass_at_k_published_form_and_pass_hat_k_is_not_the_power() -> None:
    # Chen et al. 2021 numerically stable form: 1 - prod(1 - k / arange(n - c + 1, n + 1)).
    n, c, k = 10, 3, 4
    stable = 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))
    assert pass_at_k(n, c, k) == pytest.approx(stable)
    # 2 of 3 passed: pass^2 is 1/3 (one pair of the three passes), not (2/3)^2.
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 2, 2) != pytest.approx((2 / 3) ** 2)


def test_pass_at_k_refuses_k_above_n() -> None:
    with pytest.raises(ValueError, match="k=4 needs at least 4 trials"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="k=4"):
        pass_hat_k(3, 3, 4)
    with pytest.raises(ValueError, match="at least 1"):
        pass_at_k(3, 1, 0)


def test_clustered_se_matches_statsmodels_cluster_robust_ols() -> None:
    """Equal trials per case: the per-case-mean SE equals OLS intercept-only, clustered by case."""
    rng = np.random.default_rng(3)
    rates = rng.beta(9.3, 0.7, size=25)
    trials = 4
    outcomes = rng.random((25, trials)) < rates[:, None]
    per_case = [(int(row.sum()), trials) for row in outcomes]
    y = outcomes.astype(float).ravel()
    groups = np.repeat(np.arange(25), trials)
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert suite_rate(per_case) == pytest.approx(float(fit.params[0]))
    assert clustered_se(per_case) == pytest.approx(float(fit.bse[0]), rel=1e-10)


def test_clustered_se_by_hand_with_unequal_trials() -> None:
    """Unequal trials: the SE of the mean of per-case rates, written out by hand."""
    per_case = [(3, 3), (1, 2), (0, 1), (4, 5)]
    rates = [1.0, 0.5, 0.0, 0.8]
    mean = sum(rates) / 4
    by_hand = math.sqrt(sum((r - mean) ** 2 for r in rates) / (4 * 3))
    assert suite_rate(per_case) == pytest.approx(mean)
    assert clustered_se(per_case) == pytest.approx(by_hand)
    t = sps.t.ppf(0.975, 3)
    assert suite_interval(per_case) == pytest.approx(
        (max(0.0, mean - t * by_hand), min(1.0, mean + t * by_hand))
    )


def test_clustered_se_edges() -> None:
    assert math.isnan(clustered_se([(2, 3)]))
    assert math.isnan(suite_rate([]))
    assert suite_interval([(2, 3)]) == (0.0, 1.0)
    assert clustered_se([(3, 3), (3, 3)]) == 0.0
    with pytest.raises(ValueError, match="no trials"):
        clustered_se([(0, 0), (1, 1)])


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 0), (5, 1), (1, 5), (7, 7), (12, 3), (0, 9)])
def test_mcnemar_matches_statsmodels_and_the_one_sided_binomial(b: int, c: int) -> None:
    expected = mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    one_sided = sum(math.comb(b + c, x) for x in range(b, b + c + 1)) / 2 ** (b + c)
    assert mcnemar_worse(b, c) == pytest.approx(one_sided if b + c else 1.0)


def _brute_sign_flip(diffs: list[Fraction]) -> tuple[float, float]:
    """Both p-values by listing all 2^n sign assignments (in integer units of 1/scale)."""
    scale = math.lcm(*(d.denominator for d in diffs))
    values = np.array([int(d * scale) for d in diffs])
    signs = np.array(list(itertools.product((1, -1), repeat=len(diffs))))
    sums = signs @ values
    observed = int(values.sum())
    return float(np.mean(sums <= observed)), float(np.mean(np.abs(sums) >= abs(observed)))


@pytest.mark.parametrize("seed", range(6))
def test_exact_sign_flip_equals_enumeration_of_every_sign_assignment(seed: int) -> None:
    rng = np.random.default_rng(seed)
    diffs = [Fraction(int(x), 3) for x in rng.integers(-3, 4, size=12)]
    diffs += [Fraction(1, 2), Fraction(-2, 5)]
    result = sign_flip_test(diffs)
    assert result.method is SignFlipMethod.EXACT
    assert (result.p_worse, result.p_two_sided) == pytest.approx(_brute_sign_flip(diffs))
    assert result.nonzero == sum(1 for d in diffs if d)


def test_sign_flip_with_one_trial_is_mcnemar() -> None:
    diffs = [Fraction(-1)] * 6 + [Fraction(1)] * 2 + [Fraction(0)] * 12
    result = sign_flip_test(diffs)
    assert result.p_worse == pytest.approx(mcnemar_worse(6, 2))
    assert result.p_two_sided == pytest.approx(mcnemar_exact(6, 2))


@pytest.mark.slow
def test_sign_flip_monte_carlo_is_seeded_and_close_to_the_normal_limit() -> None:
    # Many distinct magnitudes over a huge common denominator: too much work to count exactly.
    diffs = [Fraction(-(i % 97) - 1, 9973) for i in range(150)] + [
        Fraction(i % 89 + 1, 9967) for i in range(120)
    ]
    first = sign_flip_test(diffs)
    assert first.method is SignFlipMethod.MONTE_CARLO
    assert sign_flip_test(diffs) == first
    values = np.array([float(d) for d in diffs])
    z = values.sum() / math.sqrt(float((values**2).sum()))
    assert first.p_worse == pytest.approx(sps.norm.cdf(z), abs=4 / math.sqrt(MONTE_CARLO_DRAWS))


def test_sign_flip_without_moves_is_one() -> None:
    result = sign_flip_test([0.0, 0.0])
    assert (result.p_worse, result.p_two_sided, result.nonzero) == (1.0, 1.0, 0)


def test_paired_t_interval_matches_scipy() -> None:
    diffs = [-1 / 3, 0.0, -2 / 3, 1 / 3, 0.0, -1.0, 0.0, -1 / 3]
    mean, low, high = paired_t_interval(diffs)
    ci = sps.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    assert (mean, low, high) == pytest.approx((float(np.mean(diffs)), ci.low, ci.high))
    assert math.isnan(paired_t_interval([0.5])[1])


@pytest.mark.parametrize(
    ("before", "after"), [((3, 3), (0, 3)), ((2, 3), (1, 3)), ((5, 5), (1, 4)), ((0, 2), (2, 2))]
)
def test_fisher_exact_matches_scipy(before: tuple[int, int], after: tuple[int, int]) -> None:
    table = [[before[0], before[1] - before[0]], [after[0], after[1] - after[0]]]
    assert fisher_exact(before, after) == pytest.approx(sps.fisher_exact(table).pvalue)


def test_benjamini_hochberg_matches_statsmodels() -> None:
    pvalues = [0.01, 0.04, 0.03, 0.2, 0.005, 0.9, 0.041, 0.02]
    for alpha in (0.05, 0.1):
        reject, adjusted, _, _ = multipletests(pvalues, alpha=alpha, method="fdr_bh")
        assert benjamini_hochberg(pvalues, alpha) == list(reject)
        assert bh_adjusted(pvalues) == pytest.approx(list(adjusted))
    assert benjamini_hochberg([], 0.05) == []


@pytest.mark.parametrize(
    ("b", "c"), [((56, 60), (48, 60)), ((30, 33), (29, 33)), ((9, 10), (4, 9))]
)
def test_two_proportion_z_matches_statsmodels(b: tuple[int, int], c: tuple[int, int]) -> None:
    z, p = proportions_ztest([b[0], c[0]], [b[1], c[1]], alternative="larger")
    result = two_proportion_z(b, c, cases=20)
    assert (result.z, result.p_worse) == pytest.approx((z, p))
    assert result.flagged == (p < 0.05)
    assert not result.low_n


def test_two_proportion_z_small_sample_falls_back_to_the_points_rule() -> None:
    drop = two_proportion_z((8, 8), (7, 8), cases=8)
    assert drop.low_n and drop.drop_points == pytest.approx(12.5) and drop.flagged
    small = two_proportion_z((8, 8), (7, 8), cases=8, threshold_points=20.0)
    assert not small.flagged
    assert two_proportion_z((8, 8), (7, 8)).low_n  # one trial per case: 8 cases
    same = two_proportion_z((5, 5), (5, 5), cases=5)
    assert math.isnan(same.z) and same.p_worse == 1.0 and not same.flagged


@pytest.mark.parametrize(
    ("p1", "p2", "label"),
    [(0.93, 0.93, "negligible"), (0.93, 0.85, "small"), (0.9, 0.6, "medium"), (0.95, 0.5, "large")],
)
def test_cohens_h_and_its_label(p1: float, p2: float, label: str) -> None:
    h = cohens_h(p1, p2)
    assert h == pytest.approx(2 * np.arcsin(np.sqrt(p1)) - 2 * np.arcsin(np.sqrt(p2)))
    assert cohens_h(p2, p1) == pytest.approx(-h)
    assert effect_label(h) == label == effect_label(-h)
    assert [effect_label(x) for x in (0.19, 0.2, 0.49, 0.5, 0.79, 0.8)] == [
        "negligible",
        "small",
        "small",
        "medium",
        "medium",
        "large",
    ]


def test_cases_needed_reaches_the_asked_power() -> None:
    sd = binomial_diff_sd(0.93, 0.83, 3)
    n = cases_needed(0.10, sd, alpha=0.05, power=0.8)
    assert paired_power(0.10, sd, n, alpha=0.05) >= 0.8 > paired_power(0.10, sd, n - 1)
    # Halving the drop needs about four times the cases.
    assert cases_needed(0.05, sd) == pytest.approx(4 * n, rel=0.1)
    with pytest.raises(ValueError, match="zero"):
        cases_needed(0.0, sd)


def test_run_variance_is_the_sample_variance_of_the_run_means() -> None:
    rates = [[1.0, 0.5, 1.0], [0.5, 0.5, 1.0], [1.0, 1.0, 1.0]]
    means = [sum(r) / 3 for r in rates]
    assert run_variance(rates) == pytest.approx(float(np.var(means, ddof=1)))
    assert run_variance([[1.0, 0.5]]) == 0.0  # one run says nothing about the spread
    with pytest.raises(ValueError, match="same cases"):
        run_variance([[1.0], [1.0, 0.5]])


def test_a_drift_allowance_widens_the_sign_flip_test_and_zero_changes_nothing() -> None:
    diffs = [Fraction(-1, 3)] * 8 + [Fraction(1, 3)] * 2 + [Fraction(0)] * 10
    plain = sign_flip_test(diffs)
    assert sign_flip_test(diffs, extra_variance=0.0) == plain
    widened = sign_flip_test(diffs, extra_variance=0.01)
    assert widened.p_worse > plain.p_worse and widened.p_two_sided > plain.p_two_sided
    # the shrunk sum is read off the same exact distribution: V/(V+e) of the way to zero
    v = sum(float(d) ** 2 for d in diffs) / len(diffs) ** 2
    shrunk = sum(diffs) * math.sqrt(v / (v + 0.01))
    signs = itertools.product((-1, 1), repeat=10)
    moved = [d for d in diffs if d]
    sums = [sum(s * d for s, d in zip(choice, moved, strict=True)) for choice in signs]
    assert widened.p_worse == pytest.approx(sum(1 for x in sums if x <= shrunk + 1e-12) / 1024)
    with pytest.raises(ValueError, match="extra_variance"):
        sign_flip_test(diffs, extra_variance=-1.0)
