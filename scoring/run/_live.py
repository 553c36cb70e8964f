"""``run_live``: real attempts against a model API, each recorded to a tape.

One ``LiveRequest`` in, one ``LiveOutcome`` out.  Suites are validated, the
cases selected, the agent loaded, prices, judge, baseline and export
settings checked, all before a token is spent (``RunRefused``).  Then the
run record is started, the pool runs, traces are
exported, the gate decided, the record finished and baselines saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs

from evaltape.recorder import Source, TapeError
from evaltape.replay._shared import ScrubProposal

from .._config import Config
from .._errors import ScoringError
from ..cost._pricing import Prices
from ..judge._floors import judge_status
from ..judge._judge import Judge
from ..judge._judgement import Floors, JudgeStatus
from ..results._baselines import BaselineError
from ..results._records import RunKind, RunRecord, RunState, git_commit, make_run_id
from ..verdicts._entry_check import (
    ENTRY_PURPOSE,
    ENTRY_TRIALS,
    EntryResult,
    entry_results,
    render_selection,
    select_unchecked,
)
from ..verdicts._outcomes import CaseKey
from ..verdicts._quarantine import history_records
from ..verdicts._replaycheck import find_tapes
from ._budget import Budget
from ._cassettes import CassetteUpdate, update_cassette
from ._confirm import confirm_in_rounds, plan_confirmations
from ._env import job_env, live_wire
from ._export_step import finish_export, submit
from ._finished import PoolOutcome
from ._gate_baseline import (
    ModelBaseline,
    confirmations_needed,
    decide_gates,
    find_baselines,
)
from ._gate_flow import (
    GateOptions,
    ModelGate,
    SavedBaseline,
    baselines_folder,
    check_named_baseline,
    gate_fields,
    save_baselines,
)
from ._host import SILENT, Host, Reporter
from ._jobs import Job, JobResult, Prefix, SourceLabel
from ._plan import AttemptKey, cassette_tape, plan_live
from ._setup import (
    RunRefused,
    exporter_for,
    finish,
    judge_for,
    judge_notes,
    load_selection,
    prices_for,
    sandbox_for,
    start_run_log,
    warn_without_keys,
)
from ._volatile_tapes import volatile_in_tapes
from .attempt._workspace import tidy_run_workspaces
from .executors._choose import resolve_executor
from .executors._pool import run_pool


@attrs.frozen(kw_only=True)
class LiveRequest:
    """What to run live and how."""

    config: Config
    """Resolved settings: folders, agent, base URL, concurrency, hang limit, judge, pricing."""
    host: Host
    """The project folder, environment, clock, entropy and network the run reads."""
    models: tuple[str, ...]
    """The models under test (more than one: every case with each, through one pool)."""
    trials: int
    """Attempts per case (``ENTRY_TRIALS`` replaces it for an entry check)."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    source: Source = Source.REAL_API
    """Where the model responses come from, as recorded in each session."""
    source_detail: str = ""
    """Free text naming the server and model."""
    seed: int | None = None
    """Sampling seed; attempt ``n`` gets ``seed + n``."""
    time_limit: float | None = None
    """Stop the whole run after this many seconds; finished attempts are kept."""
    retries: int = 4
    """Retries of a 429, 5xx or connection failure before the agent sees it."""
    entry_check: bool = False
    """Run only the new or edited cases, ``ENTRY_TRIALS`` times each."""
    export: bool = True
    """Export traces when the environment configures a target."""
    export_content: bool = False
    """Exported traces include prompts, messages, tool data and the judge's rationale."""
    gate: GateOptions = attrs.field(factory=GateOptions)
    """The gate, baseline and scoreboard options."""
    update_cassettes: bool = False
    """Also put each attempt's session into ``<cassettes>/<suite>/<case id>.tape``, replacing
    the live session of the same case, model and attempt index (refused with a gate)."""
    only: tuple[AttemptKey, ...] = ()
    """Only these (case id, model, attempt index) of the planned attempts; empty: all."""
    labels: tuple[tuple[AttemptKey, SourceLabel], ...] = ()
    """Attempts whose sessions record another source than ``source`` (a re-recorded
    session keeps its recording's)."""
    prefixes: tuple[tuple[AttemptKey, Prefix], ...] = ()
    """Attempts that start from a turn: the recorded turns served before it go out of
    the recording, not to the model (``rerecord --from-turn``)."""
    budget: float | None = None
    """USD: once the attempts' cost reaches it, no new attempt starts (running ones finish
    and are kept); ``LiveOutcome.pool.not_started`` counts the rest."""
    reporter: Reporter = SILENT
    """Where progress goes while the run goes on."""


@attrs.frozen(kw_only=True)
class LiveOutcome:
    """What a live run did."""

    ran: bool
    """False when an entry check found no new or edited case (nothing ran, no record)."""
    run_id: str = ""
    """The run's id."""
    record: RunRecord | None = None
    """The finished run record, as written."""
    record_path: Path | None = None
    """Where the run record was written."""
    tapes: Path | None = None
    """The run's own tapes folder, ``<results>/tapes/<run id>``."""
    cassettes: tuple[Path, ...] = ()
    """The cassettes rewritten with this run's sessions (``update_cassettes``)."""
    recorded: int = 0
    """How many sessions went into the cassettes (``update_cassettes``)."""
    unrecorded: tuple[CassetteUpdate, ...] = ()
    """Attempts whose session did not go into its cassette (``update_cassettes``): not as
    complete as the recording, which was kept, or broken with no recording to replace."""
    models: tuple[str, ...] = ()
    """The models under test."""
    trials: int = 0
    """Attempts per case."""
    pool: PoolOutcome = attrs.field(
        factory=lambda: PoolOutcome(results=(), stopped=None, reason="")
    )
    """Every finished attempt, and why the run stopped early (if it did)."""
    judge: Judge | None = None
    """The judge that graded judged cases; None when not configured."""
    judge_status: JudgeStatus = JudgeStatus.NOT_NEEDED
    """The run's judge status."""
    floors: Floors = attrs.field(factory=Floors)
    """The judge score floors the run applied."""
    prices: Prices | None = None
    """The price table costs were computed with."""
    gates: tuple[ModelGate, ...] = ()
    """Per model, the gate's decision (empty without a gate, or when the run stopped)."""
    entry: tuple[EntryResult, ...] | None = None
    """Entry check that ran to the end: each case's entry verdict."""
    saved: tuple[SavedBaseline, ...] = ()
    """Baselines saved."""
    save_blocked: bool = False
    """A baseline save was asked for but the gate closed, so nothing was saved."""
    save_error: str = ""
    """Why saving a baseline failed ("" when it did not)."""
    volatile: tuple[ScrubProposal, ...] = ()
    """Scrub rules proposed for text of the recorded first requests that will differ on
    another run or day (``evaltape.replay.propose_scrub_rules``)."""


def _refused(exc: ScoringError) -> RunRefused:
    return RunRefused(str(exc))


def run_live(request: LiveRequest) -> LiveOutcome:
    """Run the request's cases live; see the module docstring for the order of steps.

    Raises ``RunRefused`` (invalid suite files, or any other bad
    input) before a model is called.  A stop (Ctrl-C, refused credentials,
    the time limit) is not an error: ``outcome.pool.stopped`` says which.
    """
    config, host, opts, reporter = request.config, request.host, request.gate, request.reporter
    problem = models_problem(request.models) or seed_problem(request.seed, request.trials)
    if problem is not None:
        raise RunRefused(problem)
    if request.update_cassettes and opts.gate:
        raise RunRefused("--gate never changes the cassettes; drop --update-cassettes (or --gate)")
    folder = baselines_folder(config.suites)
    try:
        check_named_baseline(opts, folder, request.models, request.trials)
    except BaselineError as exc:
        raise _refused(exc) from exc
    selection = load_selection(config, host, request.cases, request.suite)
    prices = prices_for(config, host.environ)
    chosen, trials = selection.chosen, request.trials
    if request.entry_check:
        if opts.purpose or opts.save:
            raise RunRefused(
                "--entry-check runs new and edited cases on their own; it cannot be combined "
                "with --gate, --scoreboard or --save-baseline"
            )
        try:
            records = history_records(config.results, on_missing=reporter.warning)
        except ScoringError as exc:
            raise _refused(exc) from exc
        chosen, candidates = select_unchecked(chosen, records)
        for line in render_selection(candidates):
            reporter.note(line)
        if not chosen:
            return LiveOutcome(ran=False)
        trials = ENTRY_TRIALS
    executor = resolve_executor(config, host)
    warn_without_keys(request.source, host.environ, reporter)
    sandbox = sandbox_for(config, host, reporter)
    run_id = make_run_id(host.clock, host.entropy)
    jobs = plan_live(chosen, request.models, trials, config.results, run_id, only=request.only)
    if request.labels or request.prefixes:
        labels, prefixes = dict(request.labels), dict(request.prefixes)
        jobs = tuple(
            attrs.evolve(
                job,
                label=labels.get((job.case.id, job.model, job.attempt)),
                prefix=prefixes.get((job.case.id, job.model, job.attempt)),
            )
            for job in jobs
        )
    judge = judge_for(config, host.environ, [job.model for job in jobs])
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    exporter = exporter_for(
        request.export, run_id=run_id, config=config, content=request.export_content,
        prices=prices, environ=host.environ, reporter=reporter,
    )  # fmt: skip
    commit = git_commit(host.project)
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=host.clock(),
        commit=commit,
        models=request.models,
        suites=tuple(s.name for s in chosen),
        trials=trials,
        purpose=ENTRY_PURPOSE if request.entry_check else opts.purpose,
        total=len(jobs),
        confirm_trials=opts.confirm if opts.gate else 0,
    )
    log, workspaces = start_run_log(config, host, record)
    env = job_env(
        config, host, selection, commit=commit, judge=judge, prices=prices, sandbox=sandbox,
        workspaces=workspaces,
        live=live_wire(
            host, source=request.source, source_detail=request.source_detail,
            seed=request.seed, retries=request.retries,
        ),
    )  # fmt: skip

    updated: dict[Path, None] = {}
    unrecorded: list[CassetteUpdate] = []
    recorded = [0]
    planned = [len(jobs)]  # grows by the gate's confirmation re-runs

    def on_result(result: JobResult) -> None:
        attempt = result.attempt_result()
        log.add(attempt)
        reporter.attempt(attempt, planned[0])
        if request.update_cassettes:
            try:
                update = update_cassette(config.cassettes, result)
            except TapeError as exc:
                job = result.job
                update = CassetteUpdate(
                    case_id=job.case.id, model=job.model, attempt=job.attempt,
                    cassette=cassette_tape(config.cassettes, job.case)[0], written=False,
                    why=f"cassette not updated: {exc}",
                )  # fmt: skip
                unrecorded.append(update)
                reporter.warning(update.line())
            else:
                if update.written:
                    updated[update.cassette] = None
                    recorded[0] += 1
                else:
                    unrecorded.append(update)
                    reporter.warning(update.line())
        submit(exporter, result)

    cases = sum(len(s.cases) for s in chosen)
    reporter.note(
        f"run {run_id}: {len(jobs)} attempts ({len(request.models)} model(s) x {cases} case(s) "
        f"x {trials} trial(s)), concurrency {config.concurrency}"
    )
    judged_cases = sum(1 for s in chosen for c in s.cases if c.rubric is not None)
    if judge is not None:
        reporter.note(f"judge: {judge.who}")
    elif judged_cases:
        reporter.warning(
            f"{judged_cases} judged case(s) and no judge_model: their "
            "replies are not graded (judge_status: not configured)"
        )
    budget = Budget(request.budget) if request.budget is not None else None
    began = host.clock()

    def run(batch: Sequence[Job]) -> PoolOutcome:
        spent = host.clock() - began
        limit = None if request.time_limit is None else max(0.0, request.time_limit - spent)
        return run_pool(
            batch,
            env,
            concurrency=config.concurrency,
            on_result=on_result,
            time_limit=limit,
            budget=budget,
            executor=executor,
            on_stop=reporter.note,
        )

    pool = run(jobs)
    bases: tuple[ModelBaseline, ...] = ()
    if opts.gate and pool.stopped is None:
        try:
            bases = find_baselines(
                opts, folder=folder, results=config.results, record=log.record,
                on_problem=reporter.warning,
            )  # fmt: skip
        except BaselineError as exc:
            raise _refused(exc) from exc
    if opts.gate and opts.confirm and pool.stopped is None:
        wanted = confirmations_needed(bases, log.record, opts.confirm)

        def plan(left: Sequence[tuple[str, CaseKey]], done: int, n: int) -> tuple[Job, ...]:
            return plan_confirmations(
                left, chosen, trials=trials + done, confirm=n, results=config.results,
                run_id=run_id,
            )  # fmt: skip

        def on_round(left: int, added: int) -> None:
            planned[0] += added
            log.update(total=planned[0])
            reporter.note(
                f"confirming {left} case(s) that passed (all but at most one of) their "
                f"baseline trials and fail every trial now: {added} more trial(s) in this "
                f"round, up to {opts.confirm} per case, stopping at a case's first pass"
            )

        pool = confirm_in_rounds(
            wanted, pool, confirm=opts.confirm, plan=plan, run=run, env=env, on_round=on_round
        )
    finish_export(exporter, log, reporter)
    status = judge_status(r.judgement for r in pool.results)
    gates: tuple[ModelGate, ...] = ()
    if opts.gate and pool.stopped is None:
        try:
            gates = decide_gates(
                opts,
                bases,
                record=log.record,
                attempts=pool.results,
                judge_status=status,
                floors=floors,
            )
        except BaselineError as exc:
            raise _refused(exc) from exc
        log.update(**gate_fields(gates, opts.accept))
    spent = (
        (f"budget reached: {pool.not_started} attempt(s) not started",) if pool.not_started else ()
    )
    tidy_run_workspaces(workspaces)
    final = finish(log, pool, notes=(*spent, *judge_notes(judge, status)))
    saved: tuple[SavedBaseline, ...] = ()
    blocked, save_error = False, ""
    if pool.stopped is None and opts.save:
        blocked = log.record.gate_blocked
        if not blocked:
            try:
                saved = save_baselines(opts, folder, log.record, saved_at=host.clock())
            except BaselineError as exc:
                save_error = str(exc)
    entry_done = request.entry_check and pool.stopped is None
    return LiveOutcome(
        ran=True,
        run_id=run_id,
        record=final,
        record_path=log.path,
        tapes=config.results / "tapes" / run_id,
        cassettes=tuple(updated),
        recorded=recorded[0],
        unrecorded=tuple(unrecorded),
        models=request.models,
        trials=trials,
        pool=pool,
        judge=judge,
        judge_status=status,
        floors=floors,
        prices=prices,
        gates=gates,
        entry=entry_results(final.attempts) if entry_done else None,
        saved=saved,
        save_blocked=blocked,
        save_error=save_error,
        volatile=volatile_in_tapes(find_tapes(config.results / "tapes" / run_id), config.scrub),
    )


SEED_MAX = 2**63 - 1
"""The largest seed: providers take a signed 64-bit integer (attempt ``n`` adds ``n``)."""


def seed_problem(seed: int | None, attempts: int = 1) -> str | None:
    """Why ``seed`` (plus up to ``attempts - 1``) is out of range, or None."""
    if seed is None:
        return None
    top = SEED_MAX - max(0, attempts - 1)
    if not 0 <= seed <= top:
        return f"--seed must be a whole number from 0 to {top}, got {seed}"
    return None


def models_problem(models: Sequence[str]) -> str | None:
    """Why the models under test cannot be called, or None."""
    if not models:
        return "no model under test"
    for model in models:
        if not model.strip():
            return "-m/--model must not be empty"
        if model != model.strip() or any(c.isspace() or not c.isprintable() for c in model):
            return f"-m/--model {model!r}: a model name has no spaces or control characters"
    return None
