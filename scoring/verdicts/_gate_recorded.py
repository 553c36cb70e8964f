"""One truth: the gate's decision made from its recorded inputs.

``evaltape live --gate`` gathers the inputs (the pooled baseline runs, the
exemptions, alpha, confirmation count, judge status, floors), stores them in
the run record as ``GateInputs`` and decides through ``decide_recorded``;
``evaltape compare`` reads the same inputs back and calls the same function,
so what it prints is the recorded decision, at any later time.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..results._gate_inputs import GateInputs
from ..results._records import AttemptResult
from ._gate import GateDecision, decide_gate


def decide_recorded(
    inputs: GateInputs,
    runs: Sequence[Sequence[AttemptResult]],
    current: Sequence[AttemptResult],
) -> GateDecision:
    """Decide ``current`` (the model's attempts, re-runs included) from ``inputs``.

    ``runs`` are the attempts of ``inputs.baseline_runs``, in the same order (empty: run
    zero, or no baseline when ``inputs.missing`` says what is missing).
    """
    if not runs:
        return decide_gate(
            None,
            current,
            judge_status=inputs.judge_status,
            floor_failures=inputs.floor_failures,
            missing=inputs.missing,
        )
    return decide_gate(
        [a for run in runs for a in run],
        current,
        alpha=inputs.alpha,
        judge_status=inputs.judge_status,
        floor_failures=inputs.floor_failures,
        flaky={(e.suite, e.case_id) for e in inputs.exemptions},
        confirm=inputs.confirm,
        plan_drop=inputs.plan_drop,
        runs=runs,
    )
