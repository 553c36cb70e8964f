"""The gate, baselines and the scoreboard, as ``evaltape live`` flags.

``@gate_options`` adds ``--gate``, ``--alpha``, ``--accept-baseline``,
``--baseline NAME``, ``--save-baseline``, ``--list-baselines``,
``--baseline-history NAME`` and ``--scoreboard`` and hands the command one
``GateOptions``.  The decision itself is ``scoring._gate.decide_gate``; this
module finds the baseline, prints the report, records the outcome on the run
and saves baselines.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import attrs
import click

from evaltape.scoring._config import Config, display_path
from evaltape.scoring.judge._floors import case_floors
from evaltape.scoring.judge._judgement import Floors, JudgeStatus
from evaltape.scoring.results import _baselines as baselines
from evaltape.scoring.results._baselines import Baseline, BaselineError
from evaltape.scoring.results._records import AttemptResult, RunRecord, Verdict
from evaltape.scoring.run._runner import PoolOutcome
from evaltape.scoring.verdicts._compare_render import render_comparison
from evaltape.scoring.verdicts._gate import GateDecision, GateState, decide_gate

R = TypeVar("R")

GATE_TRIALS = 3
"""Trials per case that ``--gate`` and ``--scoreboard`` imply."""


@attrs.frozen(kw_only=True)
class GateOptions:
    """The gate and baseline flags of one command line."""

    gate: bool = False
    """Decide the gate and exit 1 when it closes."""
    alpha: float = 0.05
    """Significance level of the paired regression test."""
    accept: bool = False
    """Print every reason the gate closed, exit 0, and mark the run as an accepted baseline."""
    baseline: str | None = None
    """A saved baseline to compare against (and to save under) instead of the implicit one."""
    save: bool = False
    """Save this run as a baseline after it finishes."""
    list_all: bool = False
    """Print the saved baselines and exit."""
    history_of: str | None = None
    """Print every saved copy of this baseline and exit."""
    scoreboard: bool = False
    """Exactly three trials; a case is credited only when all three pass."""

    @property
    def purpose(self) -> str:
        """The run record's ``purpose``."""
        if self.scoreboard:
            return "scoreboard"
        return "gate" if self.gate else ""


def gate_options(func: Callable[..., R]) -> Callable[..., R]:
    """Add the gate and baseline flags; the body receives ``gate_opts: GateOptions``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        opts = GateOptions(
            gate=kwargs.pop("gate"),
            alpha=kwargs.pop("alpha"),
            accept=kwargs.pop("accept_baseline"),
            baseline=kwargs.pop("baseline_name"),
            save=kwargs.pop("save_baseline"),
            list_all=kwargs.pop("list_baselines"),
            history_of=kwargs.pop("baseline_history"),
            scoreboard=kwargs.pop("scoreboard"),
        )
        if opts.accept and not opts.gate:
            raise click.UsageError("--accept-baseline only makes sense with --gate")
        return func(*args, gate_opts=opts, **kwargs)

    flags: Sequence[Callable[[Callable[..., Any]], Callable[..., Any]]] = (
        click.option(
            "--gate",
            is_flag=True,
            help="Decide the release gate against the baseline: exit 1 when it closes. "
            "Implies --trials 3.",
        ),
        click.option(
            "--alpha",
            type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
            default=0.05,
            show_default=True,
            help="Significance level of the gate's paired regression test.",
        ),
        click.option(
            "--accept-baseline",
            is_flag=True,
            help="With --gate: print every reason it closed, exit 0, and let this run "
            "become the baseline (only when the suite shrank, never when the agent got worse).",
        ),
        click.option(
            "--baseline",
            "baseline_name",
            metavar="NAME",
            default=None,
            help="Compare against the saved baseline NAME (and save under NAME).",
        ),
        click.option(
            "--save-baseline",
            is_flag=True,
            help="Save this run as a baseline in <suites>/baselines/ (latest + dated copy).",
        ),
        click.option("--list-baselines", is_flag=True, help="List saved baselines and exit."),
        click.option(
            "--baseline-history",
            metavar="NAME",
            default=None,
            help="List every saved copy of baseline NAME, newest first, and exit.",
        ),
        click.option(
            "--scoreboard",
            is_flag=True,
            help="Exactly 3 trials per case; a case is credited only when all 3 pass.",
        ),
    )
    decorated: Callable[..., Any] = wrapper
    for flag in reversed(flags):
        decorated = flag(decorated)
    return decorated


def _error(message: str, code: int = 2) -> NoReturn:
    click.echo(f"evaltape: error: {message}", err=True)
    raise SystemExit(code)


def folder(config: Config) -> Path:
    """Where baselines live: ``<suites>/baselines``."""
    return config.suites / baselines.BASELINES_DIR


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _describe(b: Baseline) -> str:
    accepted = " (accepted)" if b.accepted else ""
    commit = f" @{b.commit}" if b.commit else ""
    return (
        f"{b.name}: {b.model}, {b.passed}/{b.judged} passed, {b.trials} trial(s), "
        f"run {b.run_id}{commit}, saved {_when(b.saved_at)}{accepted}"
    )


def listing(opts: GateOptions, config: Config) -> bool:
    """Handle ``--list-baselines`` / ``--baseline-history``; True when one was printed."""
    if not (opts.list_all or opts.history_of):
        return False
    where = folder(config)
    try:
        if opts.list_all:
            found = baselines.latest_all(where)
            if not found:
                click.echo(f"no baselines saved in {display_path(where)}")
            for b in found:
                click.echo(_describe(b))
        if opts.history_of:
            for b in baselines.timeline(where, opts.history_of):
                assert b.path is not None
                click.echo(f"{display_path(b.path)}  {_describe(b)}")
    except BaselineError as exc:
        _error(str(exc))
    return True


def trials(opts: GateOptions, config: Config) -> int:
    """Trials per case: 3 under --gate/--scoreboard unless --trials says otherwise."""
    given = click.get_current_context().params.get("trials")
    if opts.scoreboard:
        if given is not None and given != GATE_TRIALS:
            _error(f"--scoreboard runs exactly {GATE_TRIALS} trials; drop --trials {given}")
        return GATE_TRIALS
    if not opts.gate:
        return config.trials
    if given is None:
        return GATE_TRIALS
    if given < GATE_TRIALS:
        click.echo(
            f"evaltape: warning: --gate with --trials {given}: honoured, but {given} trial(s) "
            "per case is too noisy to block a release on; the gate normally uses 3",
            err=True,
        )
    return int(given)


def check_named_baseline(opts: GateOptions, config: Config, models: Sequence[str]) -> None:
    """Before any model call: a usable name; a baseline to compare with must exist and match.

    With ``--save-baseline`` the name may be new (the run creates it).
    """
    if opts.baseline is None:
        return
    try:
        baselines.check_name(opts.baseline)
        if opts.save:
            return
        if len(models) > 1:
            _error("--baseline NAME holds one model's run; use it with -m, not --compare")
        b = baselines.load(folder(config), opts.baseline)
        baselines.refuse_other_model(b, models[0])
    except BaselineError as exc:
        _error(str(exc))


def floor_failures(outcome: PoolOutcome, floors: Floors) -> dict[str, list[str]]:
    """Per model, the judged cases (``suite/case``) whose scores fall below a floor."""
    suite_of = {r.job.case.id: r.job.case.suite for r in outcome.results}
    trials = ((r.job.case.id, r.job.model, r.judgement) for r in outcome.results)
    failed: dict[str, list[str]] = {}
    for case_id, model, check in sorted(case_floors(trials, floors), key=lambda t: t[:2]):
        if not check.passed:
            failed.setdefault(model, []).append(f"{suite_of[case_id]}/{case_id}")
    return failed


@attrs.frozen(kw_only=True)
class ModelGate:
    """The gate's decision for one model and what it compared against."""

    model: str
    """The model."""
    decision: GateDecision
    """The decision."""
    against: str
    """The baseline's label ("" on run zero)."""


def decide(
    opts: GateOptions,
    config: Config,
    record: RunRecord,
    outcome: PoolOutcome,
    judge_status: JudgeStatus,
    floors: Floors,
) -> list[ModelGate]:
    """Decide the gate for every model of the run."""
    failed = floor_failures(outcome, floors)
    gates: list[ModelGate] = []
    for model in record.models:
        current = [a for a in record.attempts if a.model == model]
        recent = baselines.recent_runs(
            config.results, model, exclude=record.run_id, on_problem=_warn
        )
        prior, label = _baseline_for(opts, config, recent, model)
        fingerprints = {(a.suite, a.case_id): a.fingerprint for a in current}
        flaky = baselines.failed_in(recent, fingerprints)
        decision = decide_gate(
            prior,
            current,
            alpha=opts.alpha,
            judge_status=judge_status,
            floor_failures=failed.get(model, ()),
            flaky=flaky,
        )
        gates.append(ModelGate(model=model, decision=decision, against=label))
    return gates


def _baseline_for(
    opts: GateOptions, config: Config, recent: Sequence[baselines.Prior], model: str
) -> tuple[Sequence[AttemptResult] | None, str]:
    if opts.baseline is not None:
        try:
            b = baselines.load(folder(config), opts.baseline)
        except BaselineError as exc:
            if opts.save:  # saving under a new name: nothing to compare yet
                return None, ""
            _error(str(exc))
        baselines.refuse_other_model(b, model)
        commit = f" @{b.commit}" if b.commit else ""
        return b.attempts, f'baseline "{b.name}" (run {b.run_id}{commit})'

    if not recent:
        return None, ""
    prior = recent[0]  # the implicit baseline: the newest eligible run
    commit = f" @{prior.record.commit}" if prior.record.commit else ""
    return prior.attempts, f"run {prior.record.run_id}{commit}"


def _warn(line: str) -> None:
    click.echo(f"evaltape: warning: {line}", err=True)


def outcome_fields(gates: Sequence[ModelGate], accept: bool) -> dict[str, Any]:
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


def report(gates: Sequence[ModelGate], accept: bool) -> int:
    """Print each model's comparison and decision; returns the exit code."""
    code = 0
    for g in gates:
        d = g.decision
        click.echo("")
        if d.comparison is not None:
            for line in _render(g):
                click.echo(line)
        for line in d.reasons:
            click.echo(f"  closed: {line}")
        for line in d.notes:
            click.echo(f"  note: {line}")
        word = {GateState.OPEN: "OPEN", GateState.CLOSED: "CLOSED", GateState.RUN_ZERO: "OPEN"}
        zero = " (run zero)" if d.state is GateState.RUN_ZERO else ""
        if d.state is GateState.CLOSED and accept:
            click.echo(
                f"gate [{g.model}]: CLOSED, accepted with --accept-baseline: "
                f"{len(d.reasons)} reason(s) above; this run becomes the baseline"
            )
            continue
        click.echo(f"gate [{g.model}]: {word[d.state]}{zero}")
        code = max(code, d.exit_code)
    return code


def _render(g: ModelGate) -> list[str]:
    assert g.decision.comparison is not None
    return render_comparison(
        g.decision.comparison, baseline_label=g.against, current_label="this run"
    )


def save(opts: GateOptions, config: Config, record: RunRecord) -> None:
    """``--save-baseline``: save each model's attempts (never a blocked run)."""
    if not opts.save:
        return
    if record.gate_blocked:
        click.echo(
            "evaltape: the gate closed, so this run was not saved as a baseline "
            "(--accept-baseline waves it through)",
            err=True,
        )
        return
    where = folder(config)
    for model in record.models:
        name = opts.baseline or baselines.default_name(record.suites, model)
        try:
            b = baselines.from_record(record, model, name, saved_at=time.time())
            latest, dated = baselines.save(where, b)
        except BaselineError as exc:
            _error(str(exc))
        click.echo(
            f"baseline {name}: saved {display_path(latest)} and {display_path(dated)}", err=True
        )


def print_scoreboard(record: RunRecord) -> None:
    """Per model, cases credited (all 3 attempts passed) out of cases run; splits listed."""
    click.echo("")
    click.echo(f"scoreboard ({GATE_TRIALS} trials per case; credit only when all pass):")
    for model in record.models:
        cases: dict[tuple[str, str], list[int]] = {}
        for a in record.attempts:
            if a.model != model or a.verdict is Verdict.SKIPPED:
                continue
            row = cases.setdefault((a.suite, a.case_id), [0, 0])
            row[0] += a.verdict is Verdict.PASSED
            row[1] += 1
        credited = sum(1 for p, t in cases.values() if p == t == GATE_TRIALS)
        splits = sorted(k for k, (p, t) in cases.items() if 0 < p < t)
        click.echo(f"  {model}: {credited}/{len(cases)} cases credited")
        for suite, case in splits:
            p, t = cases[(suite, case)]
            click.echo(f"    unstable: {suite}/{case} {p}/{t} (a split is not a partial pass)")
