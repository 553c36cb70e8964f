"""The gate's previously-green rule, confirmed by re-runs before it blocks.

A case green in the baseline (every trial passed) that fails every planned
trial now is strong evidence of a broken case, but not proof: a healthy case
at per-trial rate p does it with chance p³(1-p)³, and summed over a few
hundred cases that is a false alarm on a large share of healthy runs (10% at
200 cases of rate 0.93, a third when 20% of the cases sit near 0.7).  So
before the rule closes the gate the run re-runs such a case ``confirm`` more
times (``to_confirm`` names them; ``run_live`` runs them in the same pool)
and the rule closes only if those fail too: 0 of 6 with the defaults.  A
truly broken case fails them all; a healthy one at 0.93 passes at least one
of three re-runs 99.97% of the time.

The re-runs are attempts marked ``confirmation``: the paired test and the
rates read only the planned trials (``planned``), so the re-runs cannot tilt
them, and both sides of a comparison plan the same trials per case.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from evaltape.scoring.results._records import AttemptResult
from evaltape.scoring.verdicts._compare import CaseMove, Comparison, compare
from evaltape.scoring.verdicts._outcomes import CaseKey, case_outcomes

MIN_GREEN_TRIALS = 3
"""Trials a case needs on both sides before a green-to-broken move closes the gate.

A healthy case at per-trial rate 0.93 goes 3/3 -> 0/3 with chance
0.93^3 · 0.07^3 ≈ 0.03%.  With one trial a side the same case goes 1/1 -> 0/1
6.5% of the time, and the rule would fire on most healthy runs; such moves
are reported in the notes instead.
"""


class UnequalTrials(ValueError):
    """The baseline and the current run planned different trials per case."""

    def __init__(self, baseline: int, current: int) -> None:
        super().__init__(
            f"the baseline ran {baseline} trial(s) per case and this run {current}: the gate "
            "compares like with like (the paired sign-flip test assumes both sides are "
            "exchangeable); use a baseline with the same --trials"
        )
        self.baseline = baseline
        self.current = current


def planned(attempts: Sequence[AttemptResult]) -> list[AttemptResult]:
    """The planned trials: every attempt but a gate's confirmation re-runs."""
    return [a for a in attempts if not a.confirmation]


def trials_per_case(attempts: Sequence[AttemptResult]) -> int:
    """Planned trials per case (highest planned attempt index + 1); 0 with no attempts."""
    return max((a.attempt + 1 for a in attempts if not a.confirmation), default=0)


def _candidates(c: Comparison, flaky: Collection[CaseKey]) -> list[CaseMove]:
    return [
        m
        for m in c.moves
        if m.gated
        and m.broken
        and m.key not in flaky
        and min(m.baseline.total, m.current.total) >= MIN_GREEN_TRIALS
    ]


def to_confirm(
    baseline: Sequence[AttemptResult],
    current: Sequence[AttemptResult],
    *,
    flaky: Collection[CaseKey] = (),
) -> tuple[CaseKey, ...]:
    """The (suite, case) keys that would close the gate on the rule and need re-runs."""
    c = compare(planned(baseline), planned(current))
    return tuple(m.key for m in _candidates(c, flaky))


def green_rule(
    c: Comparison,
    current: Sequence[AttemptResult],
    *,
    flaky: Collection[CaseKey],
    confirm: int,
) -> tuple[list[str], list[str]]:
    """(reasons, notes) of the previously-green rule on comparison ``c`` of the planned trials.

    ``current`` holds every attempt of the run, its confirmation re-runs included.
    """
    again = case_outcomes(a for a in current if a.confirmation)
    reasons: list[str] = []
    notes: list[str] = []
    for m in c.moves:
        if not (m.gated and m.broken):
            continue
        b, n = m.baseline, m.current
        line = (
            f"previously green case {m.key[0]}/{m.key[1]} fails now: "
            f"{b.passed}/{b.total} in the baseline, {n.passed}/{n.total} now"
        )
        if m.key in flaky:
            notes.append(f"{line} (it failed in earlier runs too: flaky, left to the paired test)")
            continue
        if min(b.total, n.total) < MIN_GREEN_TRIALS:
            notes.append(f"{line} (fewer than {MIN_GREEN_TRIALS} trials a side: not gated)")
            continue
        if confirm <= 0:
            reasons.append(line)
            continue
        rerun = again.get(m.key)
        if rerun is None or rerun.total == 0:
            reasons.append(
                f"{line}; no confirmation re-run was counted (a --gate run re-runs it "
                f"{confirm} time(s) before deciding)"
            )
        elif rerun.passed == 0:
            reasons.append(f"{line} and {rerun.passed}/{rerun.total} on confirmation re-runs")
        else:
            notes.append(
                f"{line}, but {rerun.passed}/{rerun.total} on confirmation re-runs: "
                "not confirmed, left to the paired test"
            )
    return reasons, notes
