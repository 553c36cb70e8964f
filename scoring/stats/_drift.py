"""Run-to-run drift: how much a whole run's pass rate moves from one run to the next.

Real providers have good and bad hours: every case of one run is a little
better or worse together.  The paired test cannot see such a shift (it moves
every per-case difference the same way, which is what a regression looks like
too), so a gate that compares runs reads drift as regressions.  With several
earlier runs of the same cases the spread of their suite means measures it:
``run_variance`` is the sample variance of the run means over the same cases.

It holds both parts of a run's movement, the shared shift and each run's own
case-sampling noise.  The gate adds it (times ``1 + 1/K`` for a pool of K
runs) to the variance the paired test already sees, so the sampling part is
counted twice: the test is conservative when nothing drifts, and it stays
within its level with the two degrees of freedom three runs give (a moment
estimate that subtracts the sampling part is too often zero then; see
docs/statistics.md for both, measured).
"""

from __future__ import annotations

from collections.abc import Sequence


def run_variance(rates: Sequence[Sequence[float]]) -> float:
    """The sample variance (rate squared) of the runs' suite means over the same cases.

    ``rates[j][i]`` is case ``i``'s pass rate in run ``j``; every run lists the same
    cases in the same order.  Fewer than two runs or no case: 0.0 (nothing to
    measure).  Raises ``ValueError`` when the runs list different numbers of cases.
    """
    runs = len(rates)
    cases = len(rates[0]) if runs else 0
    if any(len(row) != cases for row in rates):
        raise ValueError("every run must list the same cases")
    if runs < 2 or cases < 1:
        return 0.0
    means = [sum(row) / cases for row in rates]
    centre = sum(means) / runs
    return sum((m - centre) ** 2 for m in means) / (runs - 1)
