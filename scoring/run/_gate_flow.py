"""The gate of a live run, per model: find the baseline, decide, record, save.

The decision itself is ``decide_recorded`` (``decide_gate`` over recorded
inputs); this module finds what each model is compared against (a named
baseline or the pool of the last eligible runs, ``results._gate_history``),
the exemptions and the judge's floor failures, turns the per-model decisions
into the run record's gate fields (``gate_inputs`` among them) and saves
baselines.
``run_live`` calls it; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from ..judge._floors import case_floors
from ..judge._judgement import Floors, JudgeStatus
from ..results import _baselines as baselines
from ..results._baselines import BaselineError
from ..results._gate_history import exemptions, gate_history
from ..results._records import AttemptResult, Exemption, GateInputs, RunRecord
from ..verdicts._gate import (
    CONFIRM_TRIALS,
    PLAN_DROP,
    GateDecision,
    GateState,
)
from ..verdicts._gate_green import MIN_GREEN_TRIALS, UnequalTrials, to_confirm
from ..verdicts._gate_recorded import decide_recorded
from ..verdicts._outcomes import CaseKey
from ._jobs import JobResult

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


def floor_failures(results: Iterable[JobResult], floors: Floors) -> dict[str, list[str]]:
    """Per model, the judged cases (``suite/case``) whose scores fall below a floor."""
    items = list(results)
    suite_of = {r.job.case.id: r.job.case.suite for r in items}
    trials = ((r.job.case.id, r.job.model, r.judgement) for r in items)
    failed: dict[str, list[str]] = {}
    for case_id, model, check in sorted(case_floors(trials, floors), key=lambda t: t[:2]):
        if not check.passed:
            failed.setdefault(model, []).append(f"{suite_of[case_id]}/{case_id}")
    return failed


@attrs.frozen(kw_only=True)
class ModelBaseline:
    """What one model's gate compares against, found once and used for the confirmation
    re-runs and the decision alike."""

    model: str
    """The model."""
    runs: tuple[tuple[AttemptResult, ...], ...] = ()
    """The pooled baseline runs' attempts with the model, newest first (empty: none)."""
    run_ids: tuple[str, ...] = ()
    """Their run ids."""
    saved: str = ""
    """The saved baseline's name under ``--baseline NAME``."""
    label: str = ""
    """How the report names the baseline ("" on run zero)."""
    history: tuple[str, ...] = ()
    """The gated runs read for exemptions, newest first."""
    exemptions: tuple[Exemption, ...] = ()
    """Cases exempt from the previously-green rule in this run."""
    missing: str = ""
    """With no baseline: what is missing for one."""
    notes: tuple[str, ...] = ()
    """Runs passed over as the baseline, and why."""


def _label(priors: Sequence[baselines.Prior]) -> str:
    names = [
        f"run {p.record.run_id}" + (f" @{p.record.commit}" if p.record.commit else "")
        for p in priors
    ]
    return names[0] if len(names) == 1 else f"{len(names)} runs pooled: " + ", ".join(names)


def _missing(model: str, trials: int, passed: Sequence[baselines.Prior]) -> str:
    if trials < MIN_GREEN_TRIALS:
        return (
            f"this run ran {trials} trial(s) per case and a gate needs at least "
            f"{MIN_GREEN_TRIALS} a side: it is not gated and is never a gate's baseline"
        )
    if not passed:
        return ""
    seen = ", ".join(f"run {p.record.run_id} ran {p.record.trials}" for p in passed)
    return (
        f"no earlier run of {model} ran {trials} trial(s) per case ({seen}); "
        "this run can be the first baseline"
    )


def find_baselines(
    opts: GateOptions, *, folder: Path, results: Path, record: RunRecord,
    on_problem: Callable[[str], None],
) -> tuple[ModelBaseline, ...]:  # fmt: skip
    """Per model: the pooled baseline runs (or saved baseline), the exemptions and what is
    missing.  Raises ``BaselineError`` when a named baseline is gone or of another model."""
    found: list[ModelBaseline] = []
    for model in record.models:
        current = [a for a in record.attempts if a.model == model]
        prints = {(a.suite, a.case_id): a.fingerprint for a in current}
        h = gate_history(
            results, model, trials=record.trials, exclude=record.run_id, on_problem=on_problem
        )
        common = ModelBaseline(
            model=model,
            history=tuple(p.record.run_id for p in h.gated),
            exemptions=exemptions(h.gated, model, prints),
        )
        passed = h.passed_over if record.trials >= MIN_GREEN_TRIALS else ()
        notes = tuple(
            f"run {p.record.run_id} was passed over as the baseline: it ran "
            f"{p.record.trials} trial(s) per case and this run {record.trials} (like with like)"
            for p in passed
        )
        if record.trials < MIN_GREEN_TRIALS:
            found.append(attrs.evolve(common, missing=_missing(model, record.trials, ())))
        elif opts.baseline is not None:
            try:
                b = baselines.load(folder, opts.baseline)
            except BaselineError:
                if not opts.save:
                    raise
                found.append(common)  # a new name: nothing to compare yet
                continue
            baselines.refuse_other_model(b, model)
            commit = f" @{b.commit}" if b.commit else ""
            found.append(
                attrs.evolve(
                    common, runs=(b.attempts,), run_ids=(b.run_id,), saved=b.name,
                    label=f'baseline "{b.name}" (run {b.run_id}{commit})',
                )
            )  # fmt: skip
        else:
            found.append(
                attrs.evolve(
                    common,
                    runs=tuple(p.attempts for p in h.pool),
                    run_ids=tuple(p.record.run_id for p in h.pool),
                    label=_label(h.pool) if h.pool else "",
                    missing="" if h.pool else _missing(model, record.trials, passed),
                    notes=notes if h.pool else (),
                )
            )
    return tuple(found)


def _flaky(base: ModelBaseline) -> frozenset[CaseKey]:
    return frozenset((e.suite, e.case_id) for e in base.exemptions)


def confirmations_needed(
    bases: Sequence[ModelBaseline], record: RunRecord, confirm: int
) -> tuple[tuple[str, CaseKey], ...]:
    """(model, (suite, case)) of every case the previously-green rule would close the gate
    on: (nearly) green in the pooled baseline, no planned trial passing now, not exempt.
    Each needs ``confirm`` re-runs before the gate decides.  Empty when ``confirm`` is 0."""
    if confirm <= 0:
        return ()
    wanted: list[tuple[str, CaseKey]] = []
    for base in bases:
        if not base.runs:
            continue
        current = [a for a in record.attempts if a.model == base.model]
        pooled = [a for run in base.runs for a in run]
        keys = to_confirm(pooled, current, flaky=_flaky(base), runs=base.runs)
        wanted.extend((base.model, key) for key in keys)
    return tuple(wanted)


def decide_gates(
    opts: GateOptions,
    bases: Sequence[ModelBaseline],
    *,
    record: RunRecord,
    attempts: Sequence[JobResult],
    judge_status: JudgeStatus,
    floors: Floors,
) -> tuple[ModelGate, ...]:
    """Decide the gate for every model from its recorded inputs (``decide_recorded``)."""
    failed = floor_failures(attempts, floors)
    gates: list[ModelGate] = []
    for base in bases:
        current = [a for a in record.attempts if a.model == base.model]
        inputs = GateInputs(
            model=base.model,
            decision="",
            baseline_runs=base.run_ids,
            saved_baseline=base.saved,
            history=base.history,
            exemptions=base.exemptions,
            reruns=sum(1 for a in current if a.confirmation),
            alpha=opts.alpha,
            confirm=opts.confirm,
            plan_drop=opts.plan_drop,
            judge_status=judge_status.value,
            floor_failures=tuple(failed.get(base.model, ())),
            missing=base.missing,
        )
        try:
            decision = decide_recorded(inputs, base.runs, current)
        except UnequalTrials as exc:
            raise BaselineError(f"{base.label}: {exc}") from exc
        if base.notes:
            decision = attrs.evolve(decision, notes=(*decision.notes, *base.notes))
        inputs = attrs.evolve(inputs, decision=decision.state.value)
        gates.append(
            ModelGate(model=base.model, decision=decision, against=base.label, inputs=inputs)
        )
    return tuple(gates)


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
