"""One truth: the gate's decision made from its recorded inputs.

``evaltape live --gate`` gathers the inputs (the pooled baseline runs, the
exemptions, alpha, confirmation count, judge status, floors), stores them in
the run record as ``GateInputs`` and decides through ``decide_recorded``;
``evaltape compare`` reads the same inputs back and calls the same function,
so what it prints is the recorded decision, at any later time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from ..results import _baselines as baselines
from ..results._gate_inputs import GateInputs
from ..results._record_files import read_record, record_path
from ..results._records import AttemptResult, RecordError, RunRecord
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


@attrs.frozen(kw_only=True)
class Reproduced:
    """A gated run's decision made again from its record."""

    inputs: GateInputs
    """The recorded inputs."""
    decision: GateDecision | None
    """The decision made again; None when a baseline run could not be read."""
    problem: str = ""
    """Why it could not be made again ("" when it was)."""


def _run_attempts(
    results: Path, folder: Path, inputs: GateInputs, run_id: str
) -> list[AttemptResult]:
    if inputs.saved_baseline:
        for b in baselines.timeline(folder, inputs.saved_baseline):
            if b.run_id == run_id:
                return list(b.attempts)
    record = read_record(record_path(results, run_id))
    return [a for a in record.attempts if a.model == inputs.model]


def reproduce(record: RunRecord, model: str, *, results: Path, folder: Path) -> Reproduced | None:
    """``model``'s recorded gate decision of ``record``, made again from its ``gate_inputs``
    and the baseline runs they name; None when the record keeps no inputs for ``model``
    (not gated, or written before they were kept)."""
    inputs = next((g for g in record.gate_inputs if g.model == model), None)
    if inputs is None:
        return None
    try:
        runs = [_run_attempts(results, folder, inputs, rid) for rid in inputs.baseline_runs]
    except RecordError as exc:
        return Reproduced(inputs=inputs, decision=None, problem=str(exc))
    current = [a for a in record.attempts if a.model == model]
    return Reproduced(inputs=inputs, decision=decide_recorded(inputs, runs, current))
