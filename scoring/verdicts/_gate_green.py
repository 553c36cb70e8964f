"""The gate's previously-green rule, confirmed by re-runs before it blocks.

A case that passed every baseline trial, or all but one of them, and fails
every planned trial now is strong evidence of a broken case, but not proof: a
healthy case at per-trial rate p goes 3/3 -> 0/3 with chance p³(1-p)³, and
summed over a few hundred cases that is a false alarm on a large share of
healthy runs (10% at 200 cases of rate 0.93, a third when 20% of the cases sit
near 0.7).  So before the rule closes the gate the run re-runs such a case up
to ``confirm`` more times (``to_confirm`` names them; ``run_live`` runs them
in the same pool, ``CONFIRM_ROUND`` at a time, and stops re-running a case at
its first pass) and the rule closes only if every re-run fails too: 0 of 15
with the defaults.  A truly broken case fails them all.

Why so many re-runs: they are made in the same run, so whatever made this
run's trials of the case fail together (a provider's bad hour for that
prompt, a flaky dependency) makes its re-runs fail too.  With trials
correlated within a case and run (correlation 0.1 in docs/statistics.md),
0 of 6 still happens to a healthy case at 0.7 about once in 160 case-runs;
0 of 15 about once in 6,500.  Why the one baseline failure is allowed: a case
must otherwise be 3/3 in the baseline to be held to the rule at all, which a
case at 0.93 is only 80% of the time, so one broken case in a small suite
slipped through one run in five.

The re-runs are attempts marked ``confirmation``: the paired test and the
rates read only the planned trials (``planned``), so the re-runs cannot tilt
them, and both sides of a comparison plan the same trials per case.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..results._records import AttemptResult
from ._compare import CaseMove, Comparison, compare
from ._outcomes import CaseKey, CaseOutcome, case_outcomes

MIN_GREEN_TRIALS = 3
"""Trials a case needs on both sides before a green-to-broken move closes the gate.

A healthy case at per-trial rate 0.93 goes 3/3 -> 0/3 with chance
0.93^3 · 0.07^3 ≈ 0.03%.  With one trial a side the same case goes 1/1 -> 0/1
6.5% of the time, and the rule would fire on most healthy runs; such moves
are reported in the notes instead.
"""


GREEN_SLACK = 1
"""Baseline failures a case may have and still be held to the rule (with at least
``MIN_GREEN_TRIALS`` trials a side): 3/3 and 2/3 baselines are, 1/3 is not.  With a pool
of baseline runs a case is held when one pooled run had it so (``green_in``)."""

CONFIRM_ROUND = 3
"""Confirmation re-runs a case gets at a time; a case stops being re-run at its first pass."""


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


def _nearly_green(o: CaseOutcome) -> bool:
    """Every trial passed, or (with enough trials) all but ``GREEN_SLACK`` of them."""
    if o.passed == 0:
        return False
    return o.green or (o.total >= MIN_GREEN_TRIALS and o.total - o.passed <= GREEN_SLACK)


def green_in(runs: Sequence[Sequence[AttemptResult]]) -> frozenset[CaseKey] | None:
    """The cases (nearly) green in at least one of the pooled baseline ``runs``; None for
    no pool (the baseline is one run, read as a whole).

    Held to the rule is a case that was recently healthy in *some* pooled run: a run that
    cannot earn exemptions (ungated, accepted) can add failures to the pool, but cannot
    free a case from the rule while another pooled run had it green.
    """
    if not runs:
        return None
    found: set[CaseKey] = set()
    for run in runs:
        found.update(k for k, o in case_outcomes(planned(run)).items() if _nearly_green(o))
    return frozenset(found)


def _held(m: CaseMove, green: Collection[CaseKey] | None = None) -> bool:
    """The rule looks at this move: gated, no planned trial passing now, and (nearly) green
    in the baseline, or in one of its pooled runs."""
    if not (m.gated and m.current.passed == 0 and m.baseline.passed > 0):
        return False
    return _nearly_green(m.baseline) if green is None else m.key in green


def _candidates(
    c: Comparison, flaky: Collection[CaseKey], green: Collection[CaseKey] | None = None
) -> list[CaseMove]:
    return [
        m
        for m in c.moves
        if _held(m, green)
        and m.key not in flaky
        and min(m.baseline.total, m.current.total) >= MIN_GREEN_TRIALS
    ]


def to_confirm(
    baseline: Sequence[AttemptResult],
    current: Sequence[AttemptResult],
    *,
    flaky: Collection[CaseKey] = (),
    runs: Sequence[Sequence[AttemptResult]] = (),
) -> tuple[CaseKey, ...]:
    """The (suite, case) keys that would close the gate on the rule and need re-runs;
    ``runs`` are the baseline runs ``baseline`` pools (empty: it is one run)."""
    c = compare(planned(baseline), planned(current))
    return tuple(m.key for m in _candidates(c, flaky, green_in(runs)))


def green_rule(
    c: Comparison,
    current: Sequence[AttemptResult],
    *,
    flaky: Collection[CaseKey],
    confirm: int,
    runs: Sequence[Sequence[AttemptResult]] = (),
) -> tuple[list[str], list[str]]:
    """(reasons, notes) of the previously-green rule on comparison ``c`` of the planned trials.

    ``current`` holds every attempt of the run, its confirmation re-runs included.
    """
    again = case_outcomes(a for a in current if a.confirmation)
    green = green_in(runs)
    reasons: list[str] = []
    notes: list[str] = []
    for m in c.moves:
        if not _held(m, green):
            continue
        b, n = m.baseline, m.current
        line = (
            f"previously {'green' if b.green else 'passing'} case {m.key[0]}/{m.key[1]} "
            f"fails now: {b.passed}/{b.total} in the baseline, {n.passed}/{n.total} now"
        )
        if m.key in flaky:
            notes.append(
                f"{line} (exempt once: it failed every planned trial of an earlier gated "
                "run too: flaky, left to the paired test)"
            )
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
                f"{line}; no confirmation re-run was counted (a --gate run re-runs it up "
                f"to {confirm} time(s), until one passes, before deciding)"
            )
        elif rerun.passed == 0:
            short = f" (of {confirm} planned)" if rerun.total < confirm else ""
            reasons.append(
                f"{line} and {rerun.passed}/{rerun.total} on confirmation re-runs{short}"
            )
        else:
            notes.append(
                f"{line}, but {rerun.passed}/{rerun.total} on confirmation re-runs: "
                "not confirmed, left to the paired test"
            )
    return reasons, notes
