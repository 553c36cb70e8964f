"""The release gate: turn a comparison with the baseline into open or closed.

"Every trial of every case must pass" cannot be the rule: at a healthy
per-trial pass rate of 0.93, 20 cases with 3 trials each all pass about
1.3% of the time, and a gate that fires on healthy runs gets ignored.  The
gate instead closes on evidence:

- a significant one-sided paired regression at ``alpha`` (``compare``);
- a previously green case that is now broken: every trial passed in the
  baseline and *no* trial passes now, with at least ``MIN_GREEN_TRIALS``
  trials on both sides (see ``MIN_GREEN_TRIALS`` for why);
- a judged case below its score floor;
- a judge that did not grade what it had to (not configured, unscored,
  not re-judged, an error).

Quarantined and known-gap cases never close it.  With no baseline for the
model the run is run zero and passes.  Exit codes: 0 open or run zero,
1 closed (``GateDecision.exit_code``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Sequence

import attrs

from evaltape.scoring.judge._judgement import JudgeStatus
from evaltape.scoring.results._records import AttemptResult
from evaltape.scoring.stats._power import binomial_diff_sd, cases_needed, paired_power
from evaltape.scoring.verdicts._compare import Comparison, compare
from evaltape.scoring.verdicts._outcomes import case_outcomes

MIN_GREEN_TRIALS = 3
"""Trials a case needs on both sides before a green-to-broken move closes the gate.

A healthy case at per-trial rate 0.93 goes 3/3 -> 0/3 with chance
0.93^3 · 0.07^3 ≈ 0.03%, so among 20 such cases the rule fires on about
0.55% of healthy runs.  With one trial a side the same case goes 1/1 -> 0/1
6.5% of the time, and the rule would fire on most healthy runs; such moves
are reported in the notes instead.
"""

POWER = 0.8
"""Below this power to see the observed drop, a non-significant drop is called underpowered."""

OPEN_JUDGE = frozenset({"ok", "no judged cases", "graded", "not needed"})
"""Judge statuses (as text) that leave the gate open."""


class GateState(enum.Enum):
    """The gate's decision."""

    OPEN = "open"
    """No rule closed it: the release may go."""
    CLOSED = "closed"
    """At least one rule closed it; ``GateDecision.reasons`` says which."""
    RUN_ZERO = "run zero"
    """No baseline for this model: nothing to compare, the run passes."""


EXIT_CODES = {GateState.OPEN: 0, GateState.RUN_ZERO: 0, GateState.CLOSED: 1}
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


def _underpowered(c: Comparison, alpha: float) -> str | None:
    t = c.test
    if c.significant or t.cases == 0 or not t.effect_points < 0.0:
        return None
    drop = -t.effect_points / 100.0
    sd = t.sd_points / 100.0 if not math.isnan(t.sd_points) else 0.0
    if sd <= 0.0:
        k = max(1, min(c.baseline.k, c.current.k))
        sd = binomial_diff_sd(c.baseline.rate, c.current.rate, k)
    if sd <= 0.0 or paired_power(drop, sd, t.cases, alpha=alpha) >= POWER:
        return None
    needed = cases_needed(drop, sd, alpha=alpha, power=POWER)
    return (
        f"inconclusive: underpowered — about {needed} cases needed to detect a drop of "
        f"{drop * 100:.1f} points at alpha {alpha:g} with power {POWER:g} "
        f"(this comparison has {t.cases})"
    )


def decide_gate(
    baseline: Sequence[AttemptResult] | None,
    current: Sequence[AttemptResult],
    *,
    alpha: float = 0.05,
    judge_status: JudgeStatus | str = "ok",
    floor_failures: Sequence[str] = (),
    flaky: Collection[tuple[str, str]] = (),
) -> GateDecision:
    """Decide the gate for ``current`` against ``baseline`` (None: run zero).

    ``judge_status`` is the run's ``JudgeStatus`` (or its text; "ok" and
    "no judged cases" are accepted too): anything but graded or not needed
    closes the gate.  ``floor_failures`` names judged cases (``case`` or
    ``suite/case``) below their floor.  ``flaky`` holds ``(suite, case)``
    keys that failed in earlier baseline-eligible runs: for them the
    previously-green rule is a note, and the paired test alone decides (a
    case that is green in the baseline only by luck must not close a healthy
    run).  Run zero passes; its notes still list judge and floor problems.
    """
    judge = _judge_problem(judge_status)
    floors = [f"judged case {name} is below its score floor" for name in floor_failures]
    if baseline is None:
        skipped = [f"not gated on run zero: {x}" for x in ([judge] if judge else []) + floors]
        first = "run zero: no baseline for this model, so the gate passes"
        return GateDecision(state=GateState.RUN_ZERO, notes=(first, *skipped))
    c = compare(baseline, current, alpha=alpha)
    reasons: list[str] = []
    notes: list[str] = []
    t = c.test
    if c.significant and t.effect_points < 0.0:
        reasons.append(
            f"significant regression: per-case mean {c.baseline.rate * 100:.1f}% -> "
            f"{c.current.rate * 100:.1f}% ({t.effect_points:+.1f} points), "
            f"{t.method.value} p = {t.p_worse:.4f} <= alpha {alpha:g}"
        )
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
        elif min(b.total, n.total) >= MIN_GREEN_TRIALS:
            reasons.append(line)
        else:
            notes.append(f"{line} (fewer than {MIN_GREEN_TRIALS} trials a side: not gated)")
    excluded = _excluded_names(current) if floor_failures else set()
    for name, line in zip(floor_failures, floors, strict=True):
        if name in excluded:
            notes.append(f"{line} (quarantined or known gap: not gated)")
        else:
            reasons.append(line)
    if judge:
        reasons.append(judge)
    underpowered = _underpowered(c, alpha)
    if underpowered:
        notes.append(underpowered)
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
