"""Two runs compared on the cases they share: the paired test and the regression report.

Each run's attempts are first reduced to one outcome per case (passed of
total trials).  Only cases present in both runs are compared, so adding or
removing cases cannot tilt the result; quarantined and known-gap cases are
reported but kept out of the test.  The test is paired by case: McNemar's
exact test when every case had one trial a side, otherwise a sign-flip
permutation test on the per-case differences in pass rate.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from fractions import Fraction

import attrs

from ..results._records import AttemptResult
from ..stats._drift import run_variance
from ..stats._signflip import SignFlipMethod, sign_flip_test
from ..stats._stats import (
    ZTest,
    bh_adjusted,
    clustered_se,
    cohens_h,
    effect_label,
    fisher_exact,
    mcnemar_exact,
    mcnemar_worse,
    paired_t_interval,
    pass_at_k,
    pass_hat_k,
    suite_interval,
    two_proportion_z,
)
from ._outcomes import CaseKey, CaseOutcome, case_outcomes


class Method(enum.Enum):
    """Which paired test produced the p-values."""

    MCNEMAR_EXACT = "McNemar exact test"
    """One trial per case on both sides: the discordant pairs, binomial at 1/2."""
    SIGN_FLIP_EXACT = "paired sign-flip permutation test (exact)"
    """Several trials: all sign assignments of the per-case differences counted."""
    SIGN_FLIP_MONTE_CARLO = "paired sign-flip permutation test (Monte Carlo, fixed seed)"
    """Several trials, too many to count: a fixed-seed sample of sign assignments."""
    NONE = "no test (no common cases)"
    """Nothing to compare."""


@attrs.frozen(kw_only=True)
class PairedTest:
    """The paired comparison of the tested cases."""

    method: Method
    """Which test."""
    cases: int
    """Cases in the test."""
    moved: int
    """Cases whose pass rate changed (the discordant pairs, with one trial)."""
    p_worse: float
    """One-sided p-value for "current worse than baseline"."""
    p_two_sided: float
    """Two-sided p-value for "different"."""
    effect_points: float
    """Mean per-case change in pass rate, current minus baseline, in points (NaN: no cases)."""
    ci_low: float
    """Lower bound of the paired t-interval on ``effect_points``, cut at -100 (NaN: < 2 cases)."""
    ci_high: float
    """Upper bound of the paired t-interval on ``effect_points``, cut at +100."""
    sd_points: float
    """Standard deviation of the per-case changes, in points (NaN below two cases)."""
    confidence: float = 0.95
    """Level of the interval."""
    runs: int = 1
    """Baseline runs pooled (each case's baseline rate is its rate over all of them)."""
    drift_points: float = 0.0
    """Run-to-run spread the test allowed for, in points: the standard deviation of the
    pooled runs' suite means times ``sqrt(1 + 1/runs)`` (0 with one baseline run)."""


@attrs.frozen(kw_only=True)
class RunSide:
    """One run's numbers over the tested cases."""

    model: str
    """The model."""
    cases: int
    """Tested cases."""
    passed: int
    """Trials that passed."""
    total: int
    """Trials counted."""
    rate: float
    """Mean of per-case pass rates (NaN with no cases)."""
    clustered_se: float
    """Standard error of ``rate``, clustered by case (NaN below two cases)."""
    interval: tuple[float, float]
    """95% interval of ``rate``, clustered by case: ``rate ± t·clustered_se`` (Student t,
    cases - 1 degrees of freedom).  Trials of one case are not independent, so no interval
    pools them (a Wilson interval is for one case's trials only)."""
    k: int
    """Fewest trials of any tested case: the k of ``pass_at_k`` and ``pass_hat_k``."""
    pass_at_k: float
    """Mean over cases of unbiased pass@k (NaN with no cases)."""
    pass_hat_k: float
    """Mean over cases of unbiased pass^k (all k trials pass)."""


class MoveKind(enum.Enum):
    """How a case's pass rate moved between the runs."""

    REGRESSED = "regressed"
    """Green in the baseline, not green now."""
    IMPROVED = "improved"
    """Not green in the baseline, green now."""
    WORSE = "worse"
    """Not green in either run, with a lower rate now."""
    BETTER = "better"
    """Not green in either run, with a higher rate now."""


@attrs.frozen(kw_only=True)
class CaseMove:
    """A common case whose pass rate changed."""

    kind: MoveKind
    """Which way it moved."""
    baseline: CaseOutcome
    """The case in the baseline."""
    current: CaseOutcome
    """The case now."""
    p_value: float
    """Two-sided Fisher exact test of the case's two pass counts."""
    p_adjusted: float
    """``p_value`` adjusted by Benjamini-Hochberg over every moved case."""

    @property
    def key(self) -> CaseKey:
        """(suite, case id)."""
        return (self.current.suite, self.current.case_id)

    @property
    def gated(self) -> bool:
        """Neither quarantined nor a known gap in either run."""
        return not (self.baseline.excluded or self.current.excluded)

    @property
    def broken(self) -> bool:
        """Green in the baseline and no trial passes now."""
        return self.baseline.green and self.current.passed == 0


@attrs.frozen(kw_only=True)
class Comparison:
    """Baseline and current run compared on their common cases."""

    alpha: float
    """The significance level the comparison was read at."""
    pairs: tuple[tuple[CaseOutcome, CaseOutcome], ...]
    """Every common case with usable trials on both sides, (baseline, current), sorted."""
    excluded: tuple[CaseKey, ...]
    """Common cases kept out of the test: quarantined or known gap in either run."""
    only_baseline: tuple[CaseKey, ...]
    """Cases the current run does not have (ignored by the test)."""
    only_current: tuple[CaseKey, ...]
    """Cases new since the baseline (ignored by the test)."""
    unusable: tuple[CaseKey, ...]
    """Common cases with no countable trial on one side (all skipped or tainted)."""
    baseline: RunSide
    """The baseline's numbers over the tested cases."""
    current: RunSide
    """The current run's numbers over the tested cases."""
    test: PairedTest
    """The paired test."""
    cohens_h: float
    """Cohen's h of current versus baseline rate; negative when current is lower."""
    effect: str
    """Cohen's label of ``|cohens_h|``: negligible, small, medium or large."""
    moves: tuple[CaseMove, ...]
    """Common cases whose rate changed, sorted by case."""
    ztest: ZTest | None
    """The unpaired two-proportion z-test on pooled trials, for comparison only."""

    @property
    def tested(self) -> tuple[tuple[CaseOutcome, CaseOutcome], ...]:
        """The pairs that take part in the test."""
        return tuple(p for p in self.pairs if not (p[0].excluded or p[1].excluded))

    @property
    def significant(self) -> bool:
        """The one-sided paired test says "current worse" at ``alpha``."""
        return self.test.p_worse <= self.alpha

    @property
    def regressions(self) -> tuple[CaseMove, ...]:
        """Cases green in the baseline and not green now."""
        return tuple(m for m in self.moves if m.kind is MoveKind.REGRESSED)

    @property
    def improvements(self) -> tuple[CaseMove, ...]:
        """Cases not green in the baseline and green now."""
        return tuple(m for m in self.moves if m.kind is MoveKind.IMPROVED)


def _side(model: str, outcomes: Sequence[CaseOutcome]) -> RunSide:
    counts = [(o.passed, o.total) for o in outcomes]
    passed = sum(p for p, _ in counts)
    total = sum(t for _, t in counts)
    k = min((t for _, t in counts), default=0)
    n = len(counts)
    rate = sum(p / t for p, t in counts) / n if n else math.nan
    return RunSide(
        model=model,
        cases=n,
        passed=passed,
        total=total,
        rate=rate,
        clustered_se=clustered_se(counts),
        interval=suite_interval(counts),
        k=k,
        pass_at_k=sum(pass_at_k(t, p, k) for p, t in counts) / n if n else math.nan,
        pass_hat_k=sum(pass_hat_k(t, p, k) for p, t in counts) / n if n else math.nan,
    )


def _paired(
    tested: Sequence[tuple[CaseOutcome, CaseOutcome]], runs: int = 1, drift: float = 0.0
) -> PairedTest:
    n = len(tested)
    if n == 0:
        nan = math.nan
        return PairedTest(
            method=Method.NONE,
            cases=0,
            moved=0,
            p_worse=1.0,
            p_two_sided=1.0,
            effect_points=nan,
            ci_low=nan,
            ci_high=nan,
            sd_points=nan,
        )
    exact = [Fraction(c.passed, c.total) - Fraction(b.passed, b.total) for b, c in tested]
    mean, low, high = paired_t_interval([float(d) for d in exact])
    centre = sum(exact, Fraction(0)) / n
    spread = sum(((d - centre) ** 2 for d in exact), Fraction(0))
    sd = math.sqrt(spread / (n - 1)) if n > 1 else math.nan
    if drift <= 0.0 and all(b.total == 1 and c.total == 1 for b, c in tested):
        worse = sum(1 for b, c in tested if b.passed and not c.passed)
        better = sum(1 for b, c in tested if c.passed and not b.passed)
        method = Method.MCNEMAR_EXACT
        p_worse, p_two, moved = (
            mcnemar_worse(worse, better),
            mcnemar_exact(worse, better),
            worse + better,
        )
    else:
        flip = sign_flip_test(exact, extra_variance=drift)
        method = (
            Method.SIGN_FLIP_EXACT
            if flip.method is SignFlipMethod.EXACT
            else Method.SIGN_FLIP_MONTE_CARLO
        )
        p_worse, p_two, moved = flip.p_worse, flip.p_two_sided, flip.nonzero
    return PairedTest(
        method=method,
        cases=n,
        moved=moved,
        p_worse=p_worse,
        p_two_sided=p_two,
        effect_points=mean * 100.0,
        # a difference of pass rates lies in [-100, 100] points: the t-interval is cut there
        ci_low=max(-100.0, low * 100.0) if not math.isnan(low) else low,
        ci_high=min(100.0, high * 100.0) if not math.isnan(high) else high,
        sd_points=sd * 100.0,
        runs=runs,
        drift_points=math.sqrt(drift) * 100.0,
    )


def _drift(runs: Sequence[Sequence[AttemptResult]], keys: Sequence[CaseKey]) -> tuple[int, float]:
    """(runs pooled, the extra variance of the mean difference) over the tested ``keys``:
    ``run_variance`` of the runs' suite means on the cases every run has, times
    ``1 + 1/K``.  Below two runs: (runs, 0.0)."""
    if len(runs) < 2:
        return max(1, len(runs)), 0.0
    outcomes = [case_outcomes(a for a in run if not a.confirmation) for run in runs]
    shared = [k for k in keys if all(k in o and o[k].total for o in outcomes)]
    if not shared:
        return len(runs), 0.0
    rates = [[o[k].passed / o[k].total for k in shared] for o in outcomes]
    return len(runs), run_variance(rates) * (1.0 + 1.0 / len(runs))


def _moves(pairs: Sequence[tuple[CaseOutcome, CaseOutcome]]) -> tuple[CaseMove, ...]:
    moved = [(b, c) for b, c in pairs if b.rate != c.rate]
    pvalues = [fisher_exact((b.passed, b.total), (c.passed, c.total)) for b, c in moved]
    adjusted = bh_adjusted(pvalues)
    out = []
    for (b, c), p, adj in zip(moved, pvalues, adjusted, strict=True):
        if b.green:
            kind = MoveKind.REGRESSED
        elif c.green:
            kind = MoveKind.IMPROVED
        else:
            kind = MoveKind.WORSE if c.rate < b.rate else MoveKind.BETTER
        out.append(CaseMove(kind=kind, baseline=b, current=c, p_value=p, p_adjusted=adj))
    return tuple(out)


def compare(
    baseline: Sequence[AttemptResult],
    current: Sequence[AttemptResult],
    *,
    alpha: float = 0.05,
    runs: Sequence[Sequence[AttemptResult]] = (),
) -> Comparison:
    """Compare ``current`` with ``baseline``, paired on their common cases.

    ``runs``, when given, are the baseline runs pooled into ``baseline`` (one attempt
    list each): the spread of their suite means widens the paired test so that drift
    between runs is not read as a regression (``stats.run_variance``).

    Each side must be attempts of one model (``case_outcomes``); a gate's
    confirmation re-runs are left out, so both sides count planned trials.  Cases in
    one run only are counted and ignored; quarantined and known-gap cases
    are reported as moves but kept out of the test, the rates and the z-test.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    # a gate's confirmation re-runs are not planned trials: they never enter a comparison
    before = case_outcomes(a for a in baseline if not a.confirmation)
    now = case_outcomes(a for a in current if not a.confirmation)
    common = sorted(before.keys() & now.keys())
    unusable = tuple(k for k in common if before[k].total == 0 or now[k].total == 0)
    pairs = tuple((before[k], now[k]) for k in common if k not in unusable)
    tested = [(b, c) for b, c in pairs if not (b.excluded or c.excluded)]
    excluded = tuple((c.suite, c.case_id) for b, c in pairs if b.excluded or c.excluded)
    model_b = next(iter(before.values())).model if before else ""
    model_c = next(iter(now.values())).model if now else ""
    side_b = _side(model_b, [b for b, _ in tested])
    side_c = _side(model_c, [c for _, c in tested])
    h = cohens_h(side_c.rate, side_b.rate) if tested else math.nan
    ztest = (
        two_proportion_z(
            (side_b.passed, side_b.total),
            (side_c.passed, side_c.total),
            cases=len(tested),
            alpha=alpha,
        )
        if tested
        else None
    )
    return Comparison(
        alpha=alpha,
        pairs=pairs,
        excluded=excluded,
        only_baseline=tuple(sorted(before.keys() - now.keys())),
        only_current=tuple(sorted(now.keys() - before.keys())),
        unusable=unusable,
        baseline=side_b,
        current=side_c,
        test=_paired(tested, *_drift(runs, [(c.suite, c.case_id) for _, c in tested])),
        cohens_h=h,
        effect=effect_label(h) if tested else "none",
        moves=_moves(pairs),
        ztest=ztest,
    )
