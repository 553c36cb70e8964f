"""The gate's decision printed beside a comparison, so ``compare`` and the gate never disagree
silently.

``evaltape compare`` reports the paired test; ``evaltape live --gate`` decides with more
rules (the previously-green rule with its confirmation re-runs and exemptions, score
floors, the judge).  ``gate_block`` prints a gated run's own decision, made again from the
inputs its record keeps (``recorded_lines``), or for an ungated or older run what
``decide_gate`` decides on the compared attempts (``gate_beside``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from ..results._gate_history import exemptions, gate_history
from ..results._records import AttemptResult, RunRecord
from ._gate import CONFIRM_TRIALS, GateState, decide_gate
from ._gate_green import UnequalTrials
from ._gate_recorded import Reproduced, reproduce
from ._outcomes import CaseKey

HEADING = "Gate (as evaltape live --gate decides on these attempts)"
"""The first words of the gate's line in ``compare`` for a run that kept no gate inputs."""

RECORDED = "Gate (as recorded: made again from the run's gate inputs)"
"""The first words of the gate's line in ``compare`` for a gated run with its inputs."""

WORDS = {
    GateState.OPEN: "OPEN",
    GateState.CLOSED: "CLOSED",
    GateState.RUN_ZERO: "OPEN (run zero)",
    GateState.NO_BASELINE: "NOT GATED (no baseline)",
}
"""How each state is printed."""


def recorded_lines(again: Reproduced, base_run: str = "") -> list[str]:
    """The lines of a gated run's decision made again from its recorded inputs.

    ``base_run`` is the run ``compare`` was given as BASE ("" for a saved baseline): when
    the gate pooled other runs, a note says the decision is the gate's, not BASE's.
    """
    i = again.inputs
    if again.decision is None:
        return [f"Gate: the recorded decision {i.decision!r} cannot be made again: {again.problem}"]
    d = again.decision
    lines = [f"{RECORDED}: {WORDS[d.state]}"]
    lines.extend(f"  closed: {r}" for r in d.reasons)
    lines.extend(f"  note: {n}" for n in d.notes)
    against = ", ".join(i.baseline_runs) or "none"
    saved = f' (saved baseline "{i.saved_baseline}")' if i.saved_baseline else ""
    lines.append(f"  inputs: baseline runs {against}{saved}; alpha {i.alpha:g}; "
                 f"{i.reruns} confirmation re-run(s) of up to {i.confirm} per case; "
                 f"judge status {i.judge_status!r}; {len(i.history)} gated run(s) in the "
                 "history window")  # fmt: skip
    lines.extend(
        f"  exempt: {e.suite}/{e.case_id} (it failed every planned trial of run {e.run_id})"
        for e in i.exemptions
    )
    if base_run and base_run not in i.baseline_runs:
        lines.append(
            f"  note: the gate compared against {against}, not {base_run}: the report above "
            "is against BASE, this decision is the gate's"
        )
    if d.state.value != i.decision:
        lines.append(f"  the run record says {i.decision!r}: made again, it differs")
    return lines


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
    lines = [f"{HEADING}: {WORDS[d.state]}"]
    lines.extend(f"  closed: {r}" for r in d.reasons)
    lines.extend(f"  note: {n}" for n in d.notes)
    if recorded:
        lines.append(
            f"  the run's own gate decided {recorded!r}; its record keeps no gate inputs "
            "(written before they were kept), so this is decided here against BASE with the "
            "exemptions of the runs before it, and may differ"
        )
    return lines


def gate_block(
    baseline: Sequence[AttemptResult],
    current: Sequence[AttemptResult],
    *,
    alpha: float,
    record: RunRecord | None,
    base_run: str,
    results: Path,
    folder: Path,
) -> list[str]:
    """The gate's block of ``evaltape compare``: a gated run's own decision made again from
    its recorded inputs; else what the gate decides on this pair, with the exemptions of the
    runs before ``record`` (``record`` None: a saved baseline as CURRENT, none)."""
    if record is None or not current:
        return gate_beside(baseline, current, alpha=alpha)
    model = current[0].model
    again = reproduce(record, model, results=results, folder=folder)
    if again is not None:
        return recorded_lines(again, base_run)
    h = gate_history(
        results, model, trials=record.trials, exclude=record.run_id, before=record.run_id
    )
    fingerprints = {(a.suite, a.case_id): a.fingerprint for a in current}
    flaky = {(e.suite, e.case_id) for e in exemptions(h.gated, model, fingerprints)}
    return gate_beside(
        baseline,
        current,
        alpha=alpha,
        confirm=record.confirm_trials if record.gate else CONFIRM_TRIALS,
        flaky=flaky,
        recorded=record.gate,
    )
