"""Per model, what a gate compares against, the re-runs it needs and its decision.

``find_baselines`` runs once after the planned attempts: the pool of the last
eligible runs (or the saved baseline), the history window and its
exemptions, or what is missing for a baseline (``results._gate_history``).
``confirmations_needed`` and ``decide_gates`` both read that one finding, so
the re-runs and the decision agree; the decision is ``decide_recorded`` over
the ``GateInputs`` the run record keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from ..judge._judgement import Floors, JudgeStatus
from ..results import _baselines as baselines
from ..results._baselines import BaselineError
from ..results._gate_history import exemptions, gate_history
from ..results._records import AttemptResult, Exemption, GateInputs, RunRecord
from ..verdicts._gate_green import MIN_GREEN_TRIALS, UnequalTrials, to_confirm
from ..verdicts._gate_recorded import decide_recorded
from ..verdicts._outcomes import CaseKey
from ._finished import Attempt
from ._gate_flow import GateOptions, ModelGate, floor_failures


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
    attempts: Sequence[Attempt],
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
