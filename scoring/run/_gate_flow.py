"""The gate of a live run, per model: find the baseline, decide, record, save.

The decision itself is ``_gate.decide_gate``; this module finds what each
model is compared against (a named baseline or the newest eligible run),
gathers the judge's floor failures and the recently flaky cases, turns the
per-model decisions into the run record's gate fields and saves baselines.
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
from ..results._records import AttemptResult, RunRecord
from ..verdicts._gate import (
    CONFIRM_TRIALS,
    PLAN_DROP,
    GateDecision,
    GateState,
    decide_gate,
)
from ..verdicts._gate_green import UnequalTrials, to_confirm
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


def decide_gates(
    opts: GateOptions,
    *,
    folder: Path,
    results: Path,
    record: RunRecord,
    attempts: Sequence[JobResult],
    judge_status: JudgeStatus,
    floors: Floors,
    on_problem: Callable[[str], None],
) -> tuple[ModelGate, ...]:
    """Decide the gate for every model of the run; ``BaselineError`` when a named one is gone."""
    failed = floor_failures(attempts, floors)
    gates: list[ModelGate] = []
    for model in record.models:
        current = [a for a in record.attempts if a.model == model]
        recent = baselines.recent_runs(results, model, exclude=record.run_id, on_problem=on_problem)
        prior, label, skipped = _baseline_for(opts, folder, recent, model, record.trials)
        try:
            decision = decide_gate(
                prior,
                current,
                alpha=opts.alpha,
                judge_status=judge_status,
                floor_failures=failed.get(model, ()),
                flaky=_flaky(recent, current),
                confirm=opts.confirm,
                plan_drop=opts.plan_drop,
            )
        except UnequalTrials as exc:
            raise BaselineError(f"{label}: {exc}") from exc
        if skipped:
            decision = attrs.evolve(decision, notes=(*decision.notes, *skipped))
        gates.append(ModelGate(model=model, decision=decision, against=label))
    return tuple(gates)


def _flaky(
    recent: Sequence[baselines.Prior], current: Sequence[AttemptResult]
) -> frozenset[CaseKey]:
    fingerprints = {(a.suite, a.case_id): a.fingerprint for a in current}
    return baselines.all_failed_in(recent, fingerprints)


def _baseline_for(
    opts: GateOptions, folder: Path, recent: Sequence[baselines.Prior], model: str, trials: int
) -> tuple[Sequence[AttemptResult] | None, str, tuple[str, ...]]:
    """(the baseline's attempts or None, its label, notes on runs passed over)."""
    if opts.baseline is not None:
        try:
            b = baselines.load(folder, opts.baseline)
        except BaselineError:
            if opts.save:  # saving under a new name: nothing to compare yet
                return None, "", ()
            raise
        baselines.refuse_other_model(b, model)
        commit = f" @{b.commit}" if b.commit else ""
        return b.attempts, f'baseline "{b.name}" (run {b.run_id}{commit})', ()
    skipped: list[str] = []
    for prior in recent:  # the implicit baseline: the newest eligible run with the same trials
        if prior.record.trials != trials:
            skipped.append(
                f"run {prior.record.run_id} was passed over as the baseline: it ran "
                f"{prior.record.trials} trial(s) per case and this run {trials} (like with like)"
            )
            continue
        commit = f" @{prior.record.commit}" if prior.record.commit else ""
        return prior.attempts, f"run {prior.record.run_id}{commit}", tuple(skipped)
    return None, "", tuple(skipped)


def confirmations_needed(
    opts: GateOptions, *, folder: Path, results: Path, record: RunRecord,
    on_problem: Callable[[str], None],
) -> tuple[tuple[str, CaseKey], ...]:  # fmt: skip
    """(model, (suite, case)) of every case the previously-green rule would close the gate
    on: green in the baseline, no planned trial passing now.  Each needs ``opts.confirm``
    re-runs before the gate decides.  Empty when ``opts.confirm`` is 0."""
    if opts.confirm <= 0:
        return ()
    wanted: list[tuple[str, CaseKey]] = []
    for model in record.models:
        current = [a for a in record.attempts if a.model == model]
        recent = baselines.recent_runs(results, model, exclude=record.run_id, on_problem=on_problem)
        prior, _, _ = _baseline_for(opts, folder, recent, model, record.trials)
        if prior is None:
            continue
        wanted.extend(
            (model, key) for key in to_confirm(prior, current, flaky=_flaky(recent, current))
        )
    return tuple(wanted)


def gate_fields(gates: Sequence[ModelGate], accept: bool) -> dict[str, Any]:
    """The run-record fields the gate sets."""
    closed = any(g.decision.state is GateState.CLOSED for g in gates)
    if closed:
        state = GateState.CLOSED
    elif gates and all(g.decision.state is GateState.RUN_ZERO for g in gates):
        state = GateState.RUN_ZERO
    else:
        state = GateState.OPEN
    against = "; ".join(f"{g.model}: {g.against}" for g in gates if g.against)
    return {
        "gate": state.value,
        "gate_blocked": closed and not accept,
        "baseline_accepted": closed and accept,
        "baseline": against,
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
