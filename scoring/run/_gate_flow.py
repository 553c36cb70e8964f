"""The gate of a live run: its options, the checks before any model call, the record's
gate fields and the baselines saved.

Finding the baseline and deciding are ``_gate_baseline``'s (``decide_recorded``
over the ``GateInputs`` the record keeps); this module checks a named
baseline before a token is spent, gathers the judge's floor failures, turns
the per-model decisions into the run record's gate fields (``gate_inputs``
among them) and saves baselines.  ``run_live`` calls it; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..judge._floors import case_floors
from ..judge._judgement import Floors
from ..results import _baselines as baselines
from ..results._baselines import BaselineError
from ..results._records import GateInputs, RunRecord
from ..verdicts._gate import (
    CONFIRM_TRIALS,
    PLAN_DROP,
    GateDecision,
    GateState,
)
from ._finished import Attempt

GATE_TRIALS = 3
"""Trials per case that a gate and a scoreboard imply."""


@attrs.frozen(kw_only=True)
class GateOptions:
    """What a live run does about the gate and baselines."""

    gate: bool = False
    """Decide the gate (a closed gate is the command's exit 1)."""
    alpha: float = 0.05
    """Significance level of the paired regression test."""
    accept: bool = False
    """A closed gate is accepted: the run is marked as an accepted baseline."""
    baseline: str | None = None
    """A saved baseline to compare against (and to save under) instead of the implicit one."""
    save: bool = False
    """Save this run as a baseline after it finishes."""
    scoreboard: bool = False
    """Exactly three trials; a case is credited only when all three pass."""
    confirm: int = CONFIRM_TRIALS
    """Re-runs of a green case that failed every trial before it may close the gate (0: none)."""
    plan_drop: float = PLAN_DROP
    """The drop (a rate) the gate's power note says how many cases it needs."""

    @property
    def purpose(self) -> str:
        """The run record's ``purpose``."""
        if self.scoreboard:
            return "scoreboard"
        return "gate" if self.gate else ""


@attrs.frozen(kw_only=True)
class ModelGate:
    """The gate's decision for one model and what it compared against."""

    model: str
    """The model."""
    decision: GateDecision
    """The decision."""
    against: str
    """The baseline's label ("" on run zero)."""
    inputs: GateInputs | None = None
    """What the decision was made from, as the run record keeps it."""


@attrs.frozen(kw_only=True)
class SavedBaseline:
    """One baseline a run saved."""

    name: str
    """The baseline's name."""
    latest: Path
    """The file that now holds the latest copy."""
    dated: Path
    """The dated copy."""


def baselines_folder(suites: Path) -> Path:
    """Where baselines live: ``<suites>/baselines``."""
    return suites / baselines.BASELINES_DIR


def check_named_baseline(
    opts: GateOptions, folder: Path, models: Sequence[str], trials: int = 0
) -> None:
    """Before any model call: a usable name; a baseline to compare with must exist and match.

    With ``save`` the name may be new (the run creates it).  Under ``--gate`` the baseline
    must have run ``trials`` trials per case (like with like).  Raises ``BaselineError``.
    """
    if opts.baseline is None:
        return
    baselines.check_name(opts.baseline)
    if opts.save:
        return
    if len(models) > 1:
        raise BaselineError("--baseline NAME holds one model's run; use it with -m, not --compare")
    b = baselines.load(folder, opts.baseline)
    baselines.refuse_other_model(b, models[0])
    if opts.gate and trials and b.trials != trials:
        raise BaselineError(
            f'baseline "{b.name}" ran {b.trials} trial(s) per case and this gate runs {trials}: '
            "the gate compares like with like; re-save the baseline with "
            f"--trials {trials} --save-baseline, or run with --trials {b.trials}"
        )


def floor_failures(results: Iterable[Attempt], floors: Floors) -> dict[str, list[str]]:
    """Per model, the judged cases (``suite/case``) whose scores fall below a floor."""
    items = list(results)
    suite_of = {r.case.id: r.case.suite for r in items}
    trials = ((r.case.id, r.model, r.judgement) for r in items)
    failed: dict[str, list[str]] = {}
    for case_id, model, check in sorted(case_floors(trials, floors), key=lambda t: t[:2]):
        if not check.passed:
            failed.setdefault(model, []).append(f"{suite_of[case_id]}/{case_id}")
    return failed


def gate_fields(gates: Sequence[ModelGate], accept: bool) -> dict[str, Any]:
    """The run-record fields the gate sets."""
    closed = any(g.decision.state is GateState.CLOSED for g in gates)
    if closed:
        state = GateState.CLOSED
    elif gates and all(g.decision.state is GateState.RUN_ZERO for g in gates):
        state = GateState.RUN_ZERO
    elif gates and all(
        g.decision.state in (GateState.RUN_ZERO, GateState.NO_BASELINE) for g in gates
    ):
        state = GateState.NO_BASELINE
    else:
        state = GateState.OPEN
    against = "; ".join(f"{g.model}: {g.against}" for g in gates if g.against)
    return {
        "gate": state.value,
        "gate_blocked": closed and not accept,
        "baseline_accepted": closed and accept,
        "baseline": against,
        "gate_inputs": tuple(g.inputs for g in gates if g.inputs is not None),
    }


def save_baselines(
    opts: GateOptions, folder: Path, record: RunRecord, *, saved_at: float
) -> tuple[SavedBaseline, ...]:
    """Save each model's attempts as a baseline (the caller never saves a blocked run).

    Raises ``BaselineError``; baselines saved before the error stay saved.
    """
    saved: list[SavedBaseline] = []
    for model in record.models:
        name = opts.baseline or baselines.default_name(record.suites, model)
        b = baselines.from_record(record, model, name, saved_at=saved_at)
        latest, dated = baselines.save(folder, b)
        saved.append(SavedBaseline(name=name, latest=latest, dated=dated))
    return tuple(saved)
