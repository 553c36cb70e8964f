"""``run_replay``: today's harness against recorded model outputs, offline.

One ``ReplayRequest`` in, one ``ReplayOutcome`` out.  Every recorded live
session of the selected cases is replayed through a scripted provider,
scored as recorded (rescored) and as replayed, and the two verdicts give
its change (regression, improvement, stale recording).  Nothing leaves the
machine unless the request allows a live judge or an export.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evaltape.recorder import Status

from .._config import Config, display_path
from .._errors import ScoringError
from ..cost._pricing import Prices
from ..judge._floors import judge_status
from ..judge._judge import Judge
from ..judge._judgement import Floors, JudgeStatus
from ..results._record_files import read_record
from ..results._records import (
    RUNS_DIR,
    RunKind,
    RunRecord,
    RunState,
    git_commit,
    make_run_id,
)
from ..verdicts._replaycheck import (
    Change,
    find_recorded,
    find_tapes,
    replay_exit_code,
)
from ._env import job_env
from ._export_step import finish_export, submit
from ._finished import Attempt, PoolOutcome
from ._host import SILENT, Host, Reporter
from ._jobs import JobResult, ReplayRules
from ._plan import plan_replay
from ._setup import (
    RunRefused,
    exporter_for,
    judge_for,
    load_selection,
    prices_for,
    sandbox_for,
    start_run_log,
)
from .attempt._workspace import tidy_run_workspaces
from .executors._choose import resolve_executor
from .executors._pool import run_pool


@attrs.frozen(kw_only=True)
class ReplayRequest:
    """What to replay and how."""

    config: Config
    """Resolved settings: folders, agent, base URL, concurrency, hang limit, judge, pricing."""
    host: Host
    """The project folder, environment, clock and entropy the run reads."""
    tapes: tuple[Path, ...] = ()
    """Tape files or folders; empty: every tape under the cassettes folder."""
    latest: bool = False
    """Replay only the newest session per case, model and attempt."""
    lenient: bool = False
    """``--assume-same-model``: serve the nearest recorded response to a changed request and
    finish the attempt, reporting what it would score if the model answered as recorded
    (the attempt is tainted; its decision keeps the harness change)."""
    allow_unrecorded: bool = False
    """A selected case with no recording is listed but does not fail the replay."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    allow_live_judge: bool = False
    """Ask the configured judge when the tape holds no verdict for the replayed transcript."""
    export: bool = False
    """Export the replayed attempts as traces."""
    export_content: bool = False
    """Exported traces include prompts, messages, tool data and the judge's rationale."""
    reporter: Reporter = SILENT
    """Where progress goes while the run goes on."""


@attrs.frozen(kw_only=True)
class ReplayOutcome:
    """What a replay did."""

    ran: bool
    """False when no recorded live session of the selected cases was found."""
    untested: tuple[str, ...] = ()
    """What could not be tested, one line each: unreadable tapes or sessions, selected
    cases with no recording, tapes that hold no live session.  Never a pass."""
    run_id: str = ""
    """The run's id."""
    record: RunRecord | None = None
    """The finished run record, as written."""
    record_path: Path | None = None
    """Where the run record was written."""
    pool: PoolOutcome = attrs.field(
        factory=lambda: PoolOutcome(results=(), stopped=None, reason="")
    )
    """Every finished replay (each with its ``decision``), and why it stopped early."""
    judge: Judge | None = None
    """The judge a live judgement could be asked of (only with ``allow_live_judge``)."""
    judge_status: JudgeStatus = JudgeStatus.NOT_NEEDED
    """The run's judge status."""
    floors: Floors = attrs.field(factory=Floors)
    """The judge score floors the run applied."""
    prices: Prices | None = None
    """The price table recorded calls were costed with."""

    @property
    def errors(self) -> tuple[Attempt, ...]:
        """Attempts that ended with no decision although nobody stopped them: the replay
        could not run them (an executor's error, a tape that could not be written)."""
        return tuple(
            r
            for r in self.pool.results
            if r.decision is None and r.status is not Status.INTERRUPTED
        )

    @property
    def changes(self) -> tuple[Change, ...]:
        """Each replayed attempt's change, in the order they finished."""
        return tuple(r.decision.change for r in self.pool.results if r.decision is not None)

    @property
    def exit_code(self) -> int:
        """1 on a regression or harness change, else 2 if anything went untested (or
        nothing ran), else 3 on a stale recording, else 0."""
        untested = (Change.UNTESTED,) if self.untested or not self.ran else ()
        return replay_exit_code((*self.changes, *untested))


def _not_replayed(pool: PoolOutcome) -> list[str]:
    """One UNTESTED line per attempt that errored, and one when no attempt was replayed:
    a replay that tested nothing never passes."""
    lines = []
    for r in pool.results:
        if r.decision is None and r.status is not Status.INTERRUPTED:
            where = f"{r.case.suite}/{r.case.id} {r.model} (attempt {r.attempt + 1})"
            first = (r.reason.strip().splitlines() or ["no reason given"])[0]
            lines.append(f"{where}: the replay could not run it: {first}")
    if pool.stopped is None and not any(r.decision is not None for r in pool.results):
        lines.append("no attempt was replayed: 0 of the recorded attempts ran to a decision")
    return lines


def tapes_to_replay(given: tuple[Path, ...]) -> tuple[Path, ...]:
    """The tape files of ``given`` (files, or folders searched for ``*.tape``).

    Raises ``RunRefused`` for a missing path or when no tape is found: a replay
    with nothing to replay tests nothing, so it never passes.
    """
    files: list[Path] = []
    for path in given:
        if not path.exists():
            raise RunRefused(f"{display_path(path)}: no such file or folder; nothing to replay")
        files.extend(find_tapes(path) if path.is_dir() else (path,))
    if not files:
        where = ", ".join(display_path(p) for p in given)
        raise RunRefused(f"no tapes (*.tape) in {where}; nothing to replay")
    return tuple(files)


def next_step_without_cassettes(results: Path) -> str:
    """What to run when the cassettes hold nothing: replay the newest live run's own
    tapes (``evaltape live`` without ``--update-cassettes`` records only there), or
    record into the cassettes."""
    record = "record into the cassettes with `evaltape live --update-cassettes`"
    runs = sorted((results / RUNS_DIR).glob("*.json"), reverse=True)
    for path in runs[:50]:  # the newest live run is almost always among the last few
        try:
            run = read_record(path)
        except ScoringError:
            continue
        tapes = results / "tapes" / run.run_id
        if run.kind is RunKind.LIVE and tapes.is_dir():
            return (
                f"; to replay the run just recorded: `evaltape replay {display_path(tapes)}`, "
                f"or {record}"
            )
    return f"; {record}, then replay"


def run_replay(request: ReplayRequest) -> ReplayOutcome:
    """Replay the recorded sessions of the request's cases and compare verdicts.

    Raises ``RunRefused`` (invalid suite files, or any other bad
    input, e.g. ``allow_live_judge`` with no judge) before anything runs.
    """
    config, host, reporter = request.config, request.host, request.reporter
    selection = load_selection(config, host, request.cases, request.suite)
    prices = prices_for(config, host.environ)
    try:
        files = tapes_to_replay(request.tapes or (config.cassettes,))
    except RunRefused as exc:
        if request.tapes:
            raise
        raise RunRefused(f"{exc}{next_step_without_cassettes(config.results)}") from exc
    all_cases = {c.id: c for s in selection.suites for c in s.cases}
    found = find_recorded(files, selection.chosen, latest=request.latest, all_cases=all_cases)
    for line in (*found.notes, *found.orphans):
        reporter.note(f"evaltape: {line}")
    untested = list(found.unreadable)
    if found.unrecorded:
        listed = ", ".join(found.unrecorded)
        if request.allow_unrecorded:
            reporter.note(f"evaltape: no recording (allowed): {listed}")
        else:
            untested.append(
                f"{len(found.unrecorded)} selected case(s) have no recording: {listed} "
                "(record them with evaltape live, or pass --allow-unrecorded)"
            )
    if not found.recorded:
        untested.extend(found.not_live)
        return ReplayOutcome(ran=False, prices=prices, untested=tuple(untested))
    sandbox = sandbox_for(config, host, reporter)
    executor = resolve_executor(config, host, replays=len(found.recorded))
    run_id = make_run_id(host.clock, host.entropy)
    jobs = plan_replay(
        ((r.case, r.session) for r in found.recorded),
        config.results,
        run_id,
        packed={r.session.session_id: r.packed for r in found.recorded if r.packed is not None},
    )
    judge = None
    if request.allow_live_judge:
        judge = judge_for(config, host.environ, [j.model for j in jobs])
        if judge is None:
            raise RunRefused(
                "--allow-live-judge needs a judge: set judge_model (and judge_base_url)"
            )
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    exporter = exporter_for(
        request.export, run_id=run_id, config=config, content=request.export_content,
        prices=prices, environ=host.environ, reporter=reporter,
    )  # fmt: skip
    commit = git_commit(host.project)
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.REPLAY,
        state=RunState.RUNNING,
        started_at=host.clock(),
        commit=commit,
        models=tuple(dict.fromkeys(j.model for j in jobs)),
        suites=tuple(dict.fromkeys(j.case.suite for j in jobs)),
        total=len(jobs),
        notes=("assume-same-model",) if request.lenient else (),
    )
    log, workspaces = start_run_log(config, host, record)
    env = job_env(
        config, host, selection, commit=commit, judge=judge, prices=prices, sandbox=sandbox,
        workspaces=workspaces,
        replay=ReplayRules(lenient=request.lenient, allow_live_judge=request.allow_live_judge),
    )  # fmt: skip
    if judge is not None:
        reporter.note(f"judge: {judge.who} (asked only when no recorded verdict matches)")

    def on_result(result: JobResult) -> None:
        log.add(result.attempt_result())
        reporter.attempt(result.attempt_result(), len(jobs))
        submit(exporter, result)

    pool = run_pool(
        jobs, env, concurrency=config.concurrency, on_result=on_result, executor=executor
    )
    untested.extend(_not_replayed(pool))
    tidy_run_workspaces(workspaces)
    finish_export(exporter, log, reporter)
    status = judge_status(r.judgement for r in pool.results)
    who = (f"judge: {judge.who}",) if judge is not None else ()
    notes = (*who, f"judge_status: {status.value}")
    if pool.stopped is None:
        final = log.finish(RunState.COMPLETED, notes=notes)
    else:
        final = log.finish(RunState.CANCELLED, notes=(pool.reason, *notes))
    return ReplayOutcome(
        ran=True,
        run_id=run_id,
        record=final,
        record_path=log.path,
        pool=pool,
        judge=judge,
        judge_status=status,
        floors=floors,
        prices=prices,
        untested=tuple(untested),
    )
