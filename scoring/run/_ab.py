"""``run_ab``: two variants of the harness run now, interleaved; a report, never a gate.

One ``ABRequest`` in, one ``ABOutcome`` out.  Both variants run every
selected case ``trials`` times with one model, in one pool, in ABBA order
(``verdicts._ab``).  Tapes and both sides' run records go to
``<results>/ab/<run id>/``; the cassettes and the run history are not touched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import attrs

from evaltape.recorder import Source, Usage
from evaltape.recorder.redact import Redactor

from .._config import Config
from ..cases._cases import Suite
from ..judge._floors import judge_status
from ..judge._judge import Judge
from ..judge._judgement import JudgeStatus
from ..results._record_files import write_atomic
from ..results._record_json import record_to_json
from ..results._records import (
    AttemptResult,
    RunKind,
    RunRecord,
    RunState,
    git_commit,
    make_run_id,
)
from ..verdicts._ab import (
    AB_DIR,
    BASELINE,
    CANDIDATE,
    CaseAB,
    Variant,
    ab_folder,
    ab_tape,
    case_verdicts,
    single_model,
)
from ..verdicts._compare import Comparison, compare
from ._env import job_env, live_wire
from ._finished import PoolOutcome
from ._host import SILENT, Host, Reporter, records_redactor
from ._jobs import Job, JobResult
from ._setup import judge_for, load_selection, sandbox_for, warn_without_keys
from .executors._pool import run_pool

# -- planning ----------------------------------------------------------------


def variant_of(tape_label: str) -> str:
    """The variant an attempt planned by ``plan_ab`` belongs to, from its tape label."""
    parts = tape_label.split("/")
    if len(parts) < 3 or parts[0] != AB_DIR:
        raise ValueError(f"not an A/B attempt: {tape_label}")
    return parts[2]


def abba(trial: int, a: Variant, b: Variant) -> tuple[Variant, Variant]:
    """The order of trial ``trial``: A then B when even, B then A when odd."""
    return (a, b) if trial % 2 == 0 else (b, a)


def plan_ab(
    suites: Sequence[Suite],
    model: str,
    trials: int,
    results: Path,
    run_id: str,
    baseline: Variant,
    candidate: Variant,
) -> tuple[Job, ...]:
    """Every job of an A/B, in submission order: case by case, each case's trials in ABBA.

    A case pinning a model runs with that model on both sides.
    """
    jobs: list[Job] = []
    for suite in suites:
        for case in suite.cases:
            for trial in range(trials):
                for variant in abba(trial, baseline, candidate):
                    tape, label = ab_tape(results, run_id, variant.name, case)
                    jobs.append(
                        Job(
                            case=case,
                            model=case.model or model,
                            attempt=trial,
                            mode=RunKind.LIVE,
                            tape=tape,
                            tape_label=label,
                            run_id=run_id,
                            environ=variant.overrides,
                        )
                    )
    return tuple(jobs)


@attrs.frozen(kw_only=True)
class ABRequest:
    """What to A/B and how."""

    config: Config
    """Resolved settings: folders, agent, base URL, concurrency, trials, hang limit, judge."""
    host: Host
    """The project folder, environment, clock, entropy and network the run reads."""
    baseline: Variant
    """Variant A (``verdicts._ab.parse_variants``)."""
    candidate: Variant
    """Variant B."""
    model: str
    """The model under test, both sides."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    alpha: float = 0.05
    """Significance level of the per-case and suite-level tests."""
    source: Source = Source.REAL_API
    """Where the model responses come from, as recorded in each session."""
    source_detail: str = ""
    """Free text naming the server and model."""
    seed: int | None = None
    """Sampling seed; trial ``t`` of both sides gets ``seed + t``."""
    retries: int = 4
    """Retries of a 429, 5xx or connection failure before the agent sees it."""
    reporter: Reporter = SILENT
    """Where progress goes while the run goes on."""


@attrs.frozen(kw_only=True)
class ABOutcome:
    """What an A/B found."""

    run_id: str
    """The run's id."""
    folder: Path
    """``<results>/ab/<run id>``: both sides' tapes and run records."""
    pool: PoolOutcome
    """Every finished attempt, and why the run stopped early (if it did)."""
    sides: dict[str, tuple[AttemptResult, ...]]
    """Per variant name, its attempts."""
    usage: dict[str, Usage]
    """Per variant name, the tokens of its attempts."""
    cases: tuple[CaseAB, ...]
    """Per case, both sides' counts and the verdict."""
    comparison: Comparison
    """The paired suite-level comparison, candidate against baseline."""
    judge: Judge | None
    """The judge that graded judged cases; None when not configured."""
    judge_status: JudgeStatus
    """The run's judge status."""
    trials: int
    """Trials per case and side."""


def _write_side(
    folder: Path,
    record: RunRecord,
    variant: Variant,
    other: Variant,
    attempts: Sequence[AttemptResult],
    state: RunState,
    notes: tuple[str, ...],
    now: float,
    redactor: Redactor,
) -> Path:
    """``<results>/ab/<run id>/<variant>.json``: that side's attempts as a run record."""
    side = attrs.evolve(
        record,
        state=state,
        finished_at=now,
        updated_at=now,
        total=record.total // 2,
        attempts=tuple(attempts),
        notes=(f"ab {variant.name}: {variant.shown}", f"ab {other.name}: {other.shown}", *notes),
    )
    path = folder / f"{variant.name}.json"
    text = json.dumps(record_to_json(side), indent=1) + "\n"
    write_atomic(path, redactor.redact_text(text))
    return path


def run_ab(request: ABRequest) -> ABOutcome:
    """Run both variants interleaved, write both sides' records and compare them.

    Raises ``RunRefused`` before any model call.
    """
    config, host, reporter = request.config, request.host, request.reporter
    a, b = request.baseline, request.candidate
    selection = load_selection(config, host, request.cases, request.suite)
    warn_without_keys(request.source, host.environ, reporter)
    sandbox = sandbox_for(config, host, reporter)
    run_id = make_run_id(host.clock, host.entropy)
    trials = config.trials
    jobs = plan_ab(selection.chosen, request.model, trials, config.results, run_id, a, b)
    judge = judge_for(config, host.environ, [job.model for job in jobs])
    commit = git_commit(host.project)
    env = job_env(
        config, host, selection, commit=commit, judge=judge, sandbox=sandbox,
        live=live_wire(
            host, source=request.source, source_detail=request.source_detail,
            seed=request.seed, retries=request.retries,
        ),
    )  # fmt: skip
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=host.clock(),
        commit=commit,
        models=tuple(dict.fromkeys(job.model for job in jobs)),
        suites=tuple(s.name for s in selection.chosen),
        trials=trials,
        total=len(jobs),
    )
    cases = sum(len(s.cases) for s in selection.chosen)
    reporter.note(
        f"ab {run_id}: {cases} case(s) x {trials} trial(s) x 2 variants = "
        f"{len(jobs)} attempts with {request.model}, ABBA order, "
        f"concurrency {config.concurrency}"
    )
    reporter.note(f"  A {a.name}: {a.shown}")
    reporter.note(f"  B {b.name}: {b.shown}")
    if judge is not None:
        reporter.note(f"judge: {judge.who}")

    def on_result(result: JobResult) -> None:
        reporter.attempt(result.attempt_result(), len(jobs))

    pool = run_pool(jobs, env, concurrency=config.concurrency, on_result=on_result)
    sides: dict[str, list[AttemptResult]] = {BASELINE: [], CANDIDATE: []}
    usage: dict[str, Usage] = {BASELINE: Usage(), CANDIDATE: Usage()}
    for r in pool.results:
        name = variant_of(r.record.tape)
        sides[name].append(r.record)
        usage[name] += r.usage
    state = RunState.COMPLETED if pool.stopped is None else RunState.CANCELLED
    status = judge_status(r.judgement for r in pool.results)
    notes = (
        f"ab: ABBA interleaved, {trials} trial(s) per side, alpha {request.alpha:g}",
        *((pool.reason,) if pool.reason else ()),
        f"judge_status: {status.value}",
    )
    folder = ab_folder(config.results, run_id)
    # Both variants' values are masked in both records: either side's may be a key.
    redactor = records_redactor(host).extended(values=a.secrets + b.secrets)
    _write_side(folder, record, a, b, sides[BASELINE], state, notes, host.clock(), redactor)
    _write_side(folder, record, b, a, sides[CANDIDATE], state, notes, host.clock(), redactor)
    alpha = request.alpha
    return ABOutcome(
        run_id=run_id,
        folder=folder,
        pool=pool,
        sides={name: tuple(items) for name, items in sides.items()},
        usage=usage,
        cases=case_verdicts(sides[BASELINE], sides[CANDIDATE], alpha=alpha),
        comparison=compare(
            single_model(sides[BASELINE]), single_model(sides[CANDIDATE]), alpha=alpha
        ),
        judge=judge,
        judge_status=status,
        trials=trials,
    )
