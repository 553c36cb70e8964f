"""The release gate: turn a comparison with the baseline into open or closed.

"Every trial of every case must pass" cannot be the rule: at a healthy
per-trial pass rate of 0.93, 20 cases with 3 trials each all pass about
1.3% of the time, and a gate that fires on healthy runs gets ignored.  The
gate instead closes on evidence:

- a significant one-sided paired regression at ``alpha`` (``compare``);
- a previously green case that is now broken: every trial (or all but one)
  passed in the baseline and *no* trial passes now, with at least
  ``MIN_GREEN_TRIALS`` trials on both sides (see ``MIN_GREEN_TRIALS`` for
  why), confirmed by up to ``confirm`` re-runs in the same run that all fail
  too (``_gate_green``);
- a judged case below its score floor;
- a judge that did not grade what it had to (not configured, unscored,
  not re-judged, an error).

Quarantined and known-gap cases never close it.  With no baseline for the
model the run is run zero and passes.  Exit codes: 0 open or run zero,
1 closed (``GateDecision.exit_code``).

Like is compared with like: the paired test and the rates read the planned
trials only (confirmation re-runs are marked and kept apart), and a baseline
with another number of trials per case is refused (``UnequalTrials``): the
sign-flip test assumes the two sides are exchangeable.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Sequence

import attrs

from ..judge._judgement import JudgeStatus
from ..results._records import AttemptResult
from ..stats._plan import plan_power, shrunk_rates
from ._compare import Comparison, compare
from ._gate_green import (
    UnequalTrials,
    green_rule,
    planned,
    trials_per_case,
)
from ._outcomes import case_outcomes

POWER = 0.8
"""The power the planning note is stated at: four runs in five catch the drop."""

SIMULATED_AT_NOTE = "84-94%"
"""How often the gate closed simulated runs with a uniform drop of the size the note names
(docs/statistics.md, the power table's power-note rows: 83.5-93.5% over its grid): the
note's normal approximation is conservative, and the note says by how much."""

PLAN_DROP = 0.05
"""The drop (a rate: 5 points) the planning note says how many cases it needs."""

CONFIRM_TRIALS = 12
"""Re-runs a (nearly) green case that broke may get before it closes the gate (0 of 3 + 0 of
12), ``CONFIRM_ROUND`` at a time, stopping at its first pass; docs/statistics.md has the
trade-off measured (3 re-runs leave correlated trials at up to 13.5% false alarms)."""

OPEN_JUDGE = frozenset({"ok", "no judged cases", "graded", "not needed"})
"""Judge statuses (as text) that leave the gate open."""


class GateState(enum.Enum):
    """The gate's decision."""

    OPEN = "open"
    """No rule closed it: the release may go."""
    CLOSED = "closed"
    """At least one rule closed it; ``GateDecision.reasons`` says which."""
    RUN_ZERO = "run zero"
    """No earlier run of this model at all: nothing to compare, the run passes."""
    NO_BASELINE = "no baseline"
    """Earlier runs exist but none can be a gate's baseline (too few trials per case, or
    this run itself has too few): not gated, and ``GateDecision.notes`` says what is
    missing.  Exit 0 like run zero, never mistaken for one."""


EXIT_CODES = {
    GateState.OPEN: 0,
    GateState.RUN_ZERO: 0,
    GateState.NO_BASELINE: 0,
    GateState.CLOSED: 1,
}
"""The process exit code of each state."""


@attrs.frozen(kw_only=True)
class GateDecision:
    """What the gate decided and why."""

    state: GateState
    """Open, closed or run zero."""
    reasons: tuple[str, ...] = ()
    """Every reason it closed, one line each (empty unless closed)."""
    notes: tuple[str, ...] = ()
    """Lines worth reading that did not close it (underpowered, one-trial flips, ...)."""
    comparison: Comparison | None = None
    """The comparison with the baseline; None on run zero."""

    @property
    def exit_code(self) -> int:
        """0 when open or run zero, 1 when closed."""
        return EXIT_CODES[self.state]


def _judge_problem(status: JudgeStatus | str) -> str | None:
    text = status.value if isinstance(status, JudgeStatus) else status
    if text in OPEN_JUDGE:
        return None
    return f"judge status is {text!r}: the judged cases were not graded by a working judge"


def _excluded_names(current: Sequence[AttemptResult]) -> set[str]:
    """Names (``case`` and ``suite/case``) of the current run's quarantined or known-gap cases."""
    names: set[str] = set()
    for o in case_outcomes(current).values():
        if o.excluded:
            names.update((o.case_id, f"{o.suite}/{o.case_id}"))
    return names


def _plan_note(c: Comparison, trials: int, alpha: float, drop: float, runs: int = 1) -> str | None:
    tested = c.tested
    if len(tested) < 2 or trials < 1:
        return None
    rates = shrunk_rates([(b.passed, b.total) for b, _ in tested])
    extra = (c.test.drift_points / 100.0) ** 2
    plan = plan_power(rates, trials, alpha=alpha, power=POWER, drop=drop, runs=runs, extra=extra)
    size = f"{plan.cases} cases x {trials} trial(s)"
    if math.isnan(plan.detectable_points):
        first = f"power: no drop is detected with {POWER:.0%} power by {size}"
    else:
        first = (
            f"power: {size} detect a drop of {plan.detectable_points:.1f} points with "
            f"{POWER:.0%} power at alpha {alpha:g} (a conservative approximation: "
            f"{SIMULATED_AT_NOTE} of simulated runs closed at that drop)"
        )
    need = (
        f"about {plan.cases_needed} cases"
        if plan.cases_needed is not None
        else "more cases than can be planned"
    )
    pooled = f", {runs} baseline runs pooled" if runs > 1 else ""
    return (
        f"{first}; a {plan.drop_points:g}-point drop needs {need} at {trials} trial(s) "
        f"(planned from the baseline's per-case rates{pooled}, not from this result)"
    )


def decide_gate(
    baseline: Sequence[AttemptResult] | None,
    current: Sequence[AttemptResult],
    *,
    alpha: float = 0.05,
    judge_status: JudgeStatus | str = "ok",
    floor_failures: Sequence[str] = (),
    flaky: Collection[tuple[str, str]] = (),
    confirm: int = CONFIRM_TRIALS,
    plan_drop: float = PLAN_DROP,
    runs: Sequence[Sequence[AttemptResult]] = (),
    missing: str = "",
) -> GateDecision:
    """Decide the gate for ``current`` against ``baseline`` (None: run zero).

    ``runs`` are the baseline runs pooled into ``baseline`` (one attempt list each;
    empty: ``baseline`` is one run): their spread widens the paired test for drift and
    the previously-green rule allows one baseline failure per pooled run.  ``missing``
    (with ``baseline`` None) says why no run could be the baseline: the state is then
    ``NO_BASELINE`` with that line, not run zero.

    ``judge_status`` is the run's ``JudgeStatus`` (or its text; "ok" and
    "no judged cases" are accepted too): anything but graded or not needed
    closes the gate.  ``floor_failures`` names judged cases (``case`` or
    ``suite/case``) below their floor.  ``flaky`` holds ``(suite, case)``
    keys that failed in earlier baseline-eligible runs: for them the
    previously-green rule is a note, and the paired test alone decides (a
    case that is green in the baseline only by luck must not close a healthy
    run).  ``confirm`` is how many confirmation re-runs (attempts marked
    ``confirmation``) a green case that broke must also fail before it closes
    the gate; 0 closes on the planned trials alone.  ``plan_drop`` is the drop
    (a rate) the planning note sizes.  Run zero passes; its notes still list
    judge and floor problems.  Raises ``UnequalTrials`` when the two sides
    planned different trials per case.
    """
    judge = _judge_problem(judge_status)
    floors = [f"judged case {name} is below its score floor" for name in floor_failures]
    if baseline is None:
        if missing:
            skipped = [f"not gated: {x}" for x in ([judge] if judge else []) + floors]
            first = f"no baseline: {missing}"
            return GateDecision(state=GateState.NO_BASELINE, notes=(first, *skipped))
        skipped = [f"not gated on run zero: {x}" for x in ([judge] if judge else []) + floors]
        first = "run zero: no baseline for this model, so the gate passes"
        return GateDecision(state=GateState.RUN_ZERO, notes=(first, *skipped))
    before, now = planned(baseline), planned(current)
    kb, kc = trials_per_case(before), trials_per_case(now)
    if kb and kc and kb != kc:
        raise UnequalTrials(kb, kc)
    pooled = max(1, len(runs))
    c = compare(before, now, alpha=alpha, runs=runs)
    reasons: list[str] = []
    notes: list[str] = []
    t = c.test
    if c.significant and t.effect_points < 0.0:
        reasons.append(
            f"significant regression: per-case mean {c.baseline.rate * 100:.1f}% -> "
            f"{c.current.rate * 100:.1f}% ({t.effect_points:+.1f} points), "
            f"{t.method.value} p = {t.p_worse:.4f} <= alpha {alpha:g}"
            + (
                f" (against {t.runs} pooled runs, allowing {t.drift_points:.1f} points of "
                "run-to-run spread)"
                if t.runs > 1
                else ""
            )
        )
    green_reasons, green_notes = green_rule(c, current, flaky=flaky, confirm=confirm, runs=runs)
    reasons.extend(green_reasons)
    notes.extend(green_notes)
    excluded = _excluded_names(current) if floor_failures else set()
    for name, line in zip(floor_failures, floors, strict=True):
        if name in excluded:
            notes.append(f"{line} (quarantined or known gap: not gated)")
        else:
            reasons.append(line)
    if judge:
        reasons.append(judge)
    plan = _plan_note(c, kc or kb, alpha, plan_drop, pooled)
    if plan:
        notes.append(plan)
    if c.only_baseline or c.only_current:
        notes.append(
            f"{len(c.only_baseline)} cases only in the baseline and {len(c.only_current)} "
            "only now were left out of the comparison"
        )
    if t.cases == 0:
        notes.append("no common cases with the baseline: the paired test had nothing to test")
    state = GateState.CLOSED if reasons else GateState.OPEN
    return GateDecision(state=state, reasons=tuple(reasons), notes=tuple(notes), comparison=c)


decide = decide_gate
"""``decide_gate`` under its short name (the package exports ``decide_gate``)."""
