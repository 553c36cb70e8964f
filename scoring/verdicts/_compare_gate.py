"""The gate's decision printed beside a comparison, so ``compare`` and the gate never disagree
silently.

``evaltape compare`` reports the paired test; ``evaltape live --gate`` decides with more
rules (the previously-green rule with its confirmation re-runs, score floors, the judge).
``gate_beside`` runs the same ``decide_gate`` on the compared attempts and says what it
decides and why, or why a gate would not pair these runs at all.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ..results._records import AttemptResult
from ._gate import CONFIRM_TRIALS, GateState, decide_gate
from ._gate_green import UnequalTrials
from ._outcomes import CaseKey

HEADING = "Gate (as evaltape live --gate decides on these attempts)"
"""The first words of the gate's line in ``compare``."""


def gate_beside(
    baseline: Sequence[AttemptResult],
    current: Sequence[AttemptResult],
    *,
    alpha: float,
    confirm: int = CONFIRM_TRIALS,
    flaky: Collection[CaseKey] = (),
    recorded: str = "",
) -> list[str]:
    """The lines that follow a comparison: the gate's state, its reasons and its notes.

    ``confirm`` is the current run's confirmation count (``RunRecord.confirm_trials``),
    ``flaky`` the cases that failed in runs before it, ``recorded`` the run's own gate
    decision ("" when it was not gated).  Judge status and score floors are not in the
    attempts; when the recorded decision differs, the last line says so.
    """
    try:
        d = decide_gate(baseline, current, alpha=alpha, flaky=flaky, confirm=confirm)
    except UnequalTrials as exc:
        return [f"Gate: not applicable: {exc}"]
    word = "CLOSED" if d.state is GateState.CLOSED else "OPEN"
    lines = [f"{HEADING}: {word}"]
    lines.extend(f"  closed: {r}" for r in d.reasons)
    lines.extend(f"  note: {n}" for n in d.notes)
    if recorded and recorded != d.state.value:
        lines.append(
            f"  the run's own gate decided {recorded!r}: it also weighs the judge's status and "
            "the score floors, which a comparison of attempts does not see"
        )
    return lines
