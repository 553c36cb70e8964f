"""Jobs and the pool: one attempt is one job, a function of its inputs.

A ``Job`` names a case, a model, an attempt index, a mode (live or replay),
the tape its session is appended to and, in replay, the recorded session to
serve.  ``run_job(job, env)`` runs the agent once in a fresh workspace, writes
the session (start, exchanges, runner facts, workspace snapshot, end) and
scores it.  Jobs share nothing but read-only inputs and the run-wide ``Stop``
signal, so ``run_pool`` runs model x case x attempt through one thread pool:
comparing two models takes about as long as running one.
"""

from __future__ import annotations

import enum
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import IO, Any

import attrs
import httpx

from evaltape.recorder import (
    Event,
    Exchange,
    FactKind,
    Mode,
    RecordedSession,
    RunnerFact,
    Session,
    SessionEnded,
    SessionStarted,
    Source,
    Status,
    Usage,
    fold,
    new_session_id,
    open_session,
)
from evaltape.replay import ReplayError, ReplayTransport
from evaltape.scoring.cases._cases import Case, Suite
from evaltape.scoring.checks._score import Check, Score, Scorer
from evaltape.scoring.checks._scorers import score_session
from evaltape.scoring.cost._costs import CostBreakdown, cost_of_session, judge_cost_of_session
from evaltape.scoring.cost._pricing import Prices, built_in_prices
from evaltape.scoring.judge._floors import with_judgement
from evaltape.scoring.judge._judge import Judge, judge_request, read_rubric, reused_event
from evaltape.scoring.judge._judgement import Floors, JudgeError, Judgement, JudgeState
from evaltape.scoring.judge._reuse import judge_usage, rejudge_offline, reuse_judgement
from evaltape.scoring.results._records import AttemptResult, RunKind, Verdict
from evaltape.scoring.run._agents import (
    AgentKind,
    AgentOutcome,
    AgentSpec,
    AttemptSetup,
    RetryingTransport,
    network_transport,
    run_command,
    run_python,
)
from evaltape.scoring.run._task import Agent
from evaltape.scoring.run._workspace import (
    WorkspaceError,
    make_workspace,
    remove_workspace,
    snapshot_workspace,
)
from evaltape.scoring.verdicts._flips import effects_digest, outputs_digest
from evaltape.scoring.verdicts._replaycheck import Change, ReplayDecision, decide

POLL = 0.05
"""Seconds between checks of an attempt's time limit and the stop signal."""


class StopKind(enum.Enum):
    """Why a run stopped before every job ran."""

    INTERRUPT = "interrupt"
    """Ctrl-C (SIGINT)."""
    AUTH = "auth"
    """The provider refused the credentials (401/403)."""
    LIMIT = "limit"
    """The overall time limit passed."""


class Stop:
    """The run-wide stop signal: the first ``set`` wins and names the reason."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.kind: StopKind | None = None
        self.reason = ""
        self._lock = threading.Lock()

    def set(self, kind: StopKind, reason: str) -> None:
        """Ask every job to stop; later calls keep the first reason."""
        with self._lock:
            if self.kind is None:
                self.kind = kind
                self.reason = reason
        self.event.set()

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self.event.is_set()


@attrs.frozen(kw_only=True)
class Job:
    """One attempt of one case with one model."""

    case: Case
    """The case."""
    model: str
    """The model under test."""
    attempt: int
    """Zero-based attempt index."""
    mode: RunKind
    """LIVE or REPLAY."""
    tape: Path
    """The tape the new session is appended to."""
    tape_label: str
    """``tape`` as the run record names it (relative to cassettes or results)."""
    run_id: str
    """The run this job belongs to."""
    recorded: RecordedSession | None = None
    """Replay: the recorded session served to the agent."""
    environ: tuple[tuple[str, str], ...] = ()
    """Environment overrides for this attempt only (an A/B variant's ``env:K=V``), laid
    over ``JobEnv.environ``; never written to the tape.  ``os.environ`` is never changed."""


@attrs.frozen(kw_only=True)
class JobEnv:
    """What every job of a run reads: the agent, where it talks to, limits, scorer."""

    spec: AgentSpec
    """The agent setting, parsed."""
    agent: Agent | None
    """The imported Python agent; None for a command agent."""
    scorer: Scorer
    """Turns (case, session) into a Score."""
    stop: Stop
    """The run-wide stop signal."""
    base_url: str = "https://api.openai.com/v1"
    """The model API's base URL."""
    source: Source = Source.REAL_API
    """Where live responses come from."""
    source_detail: str = ""
    """Free text naming server and model."""
    seed: int | None = None
    """Sampling seed, if any."""
    hang_limit: float = 300.0
    """Seconds an attempt may run."""
    harness_commit: str = ""
    """Short git commit of the harness."""
    harness_version: str = ""
    """Version of the harness."""
    lenient: bool = False
    """Replay: serve the nearest recorded response instead of failing on a changed request."""
    retries: int = 4
    """Live: retries of a 429, 5xx or connection failure below the recording transport."""
    retry_delay: float = 0.5
    """Live: first backoff in seconds when the provider gives no retry-after."""
    wall_clock: Callable[[], float] = time.time
    """Unix time, for session headers."""
    network: Any = attrs.field(factory=network_transport)
    """Live: the network transport every attempt borrows (connection pool, TLS context)."""
    judge: Judge | None = None
    """Grades judged attempts that passed every other check; None: not configured."""
    floors: Floors = attrs.field(factory=Floors)
    """Judge score floors: a trial below ``floors.trial`` fails."""
    allow_live_judge: bool = False
    """Replay: ask ``judge`` when the tape holds no verdict for the replayed transcript."""
    environ: Mapping[str, str] = attrs.field(factory=lambda: dict(os.environ), repr=False)
    """The process environment captured when the run started; each job's overrides go on top."""
    prices: Prices = attrs.field(factory=built_in_prices, repr=False)
    """Prices the agent's and the judge's calls are costed with (built-in table by default)."""


@attrs.frozen(kw_only=True)
class JobResult:
    """What one job produced; ``attempt_result()`` is its run-record line."""

    job: Job
    """The job."""
    verdict: Verdict
    """Passed, failed, or error (could not be judged)."""
    reason: str
    """Why it did not pass; "" when it passed."""
    usage: Usage
    """Tokens of the session's model calls."""
    duration: float
    """Seconds the attempt took."""
    session_id: str
    """The new session's id in ``job.tape``."""
    status: Status
    """How the session ended."""
    score: Score
    """The scorer's verdict on the new session."""
    tainted: bool = False
    """The evidence is unreliable (timeout, infrastructure failure, cancelled, stale)."""
    decision: ReplayDecision | None = None
    """Replay: the decision for the recorded attempt."""
    auth_failure: bool = False
    """Live: the provider refused the credentials during this attempt."""
    judgement: Judgement | None = None
    """A judged attempt that passed every other check: what the judge said (or why not)."""
    judge_usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge spent grading this attempt; never part of ``usage``."""
    cost: CostBreakdown = attrs.field(factory=CostBreakdown)
    """The agent's model calls by token bucket, and their USD (None when unknown)."""
    judge_cost: CostBreakdown = attrs.field(factory=CostBreakdown)
    """The judge's calls grading this attempt, priced apart; never part of ``cost``."""
    outputs_digest: str = ""
    """``scoring._flips.outputs_digest`` of the session; "" when it never started."""
    effects_digest: str = ""
    """``scoring._flips.effects_digest`` of the session; "" when it never started."""

    def attempt_result(self) -> AttemptResult:
        """The ``AttemptResult`` stored in the run record."""
        d = self.decision
        return AttemptResult(
            case_id=self.job.case.id,
            suite=self.job.case.suite,
            model=self.job.model,
            attempt=self.job.attempt,
            verdict=self.verdict,
            reason=self.reason,
            usage=self.usage,
            duration=self.duration,
            tape=self.job.tape_label,
            session_id=self.session_id,
            mode=self.job.mode,
            tainted=self.tainted,
            quarantined=self.job.case.quarantined,
            known_gap=self.job.case.known_gap is not None,
            rescored=_verdict(d.rescored) if d else None,
            replayed=_verdict(d.replayed)
            if d and d.replayed and d.change is not Change.STALE
            else None,
            judge_usage=self.judge_usage,
            cost=self.cost.cost,
            judge_cost=self.judge_cost.cost if self.judge_cost.calls else None,
            judge_score=self.judgement.score if self.judgement is not None else None,
            fingerprint=self.job.case.fingerprint,
            outputs_digest=self.outputs_digest,
            effects_digest=self.effects_digest,
        )


def _verdict(score: Score | None) -> Verdict | None:
    if score is None:
        return None
    return Verdict.PASSED if score.passed else Verdict.FAILED


class _Tee:
    """The session writer, plus an in-memory copy of every event for scoring."""

    def __init__(self, writer: Any, header: SessionStarted) -> None:
        self.writer = writer
        self.events: list[Event] = [header]
        self._lock = threading.Lock()
        self._closed = False

    def now(self) -> float:
        now: float = self.writer.now()
        return now

    def append(self, event: Any) -> None:
        with self._lock:
            if self._closed:  # an abandoned agent thread still talking: dropped
                return
            self.writer.append(event)
            self.events.append(event)

    def provisional(self, status: Status, reason: str) -> tuple[Event, ...]:
        """The events so far plus the end they would get now, for scoring before the end."""
        with self._lock:
            return (*self.events, SessionEnded(at=self.writer.now(), status=status, reason=reason))

    def end(self, status: Status, reason: str) -> tuple[Event, ...]:
        with self._lock:
            self._closed = True
            self.events.append(SessionEnded(at=self.writer.now(), status=status, reason=reason))
            self.writer.end(status, reason)
            return tuple(self.events)


def _seed(job: Job, env: JobEnv) -> int | None:
    """The seed of this attempt: ``--seed`` plus the attempt index, so trials are
    distinct samples yet reproducible.  A replay hands the agent the recorded
    seed, so it sends the recorded request."""
    if job.recorded is not None:
        return job.recorded.header.seed
    return None if env.seed is None else env.seed + job.attempt


def _header(job: Job, env: JobEnv, session_id: str) -> SessionStarted:
    replaying = job.recorded is not None
    source = job.recorded.header.source if job.recorded is not None else env.source
    detail = job.recorded.header.source_detail if job.recorded is not None else env.source_detail
    return SessionStarted(
        session_id=session_id,
        started_at=env.wall_clock(),
        case_id=job.case.id,
        attempt=job.attempt,
        model=job.model,
        mode=Mode.REPLAY if replaying else Mode.LIVE,
        source=source,
        source_detail=detail,
        harness_commit=env.harness_commit,
        harness_version=env.harness_version,
        seed=_seed(job, env),
        replay_of=job.recorded.session_id if job.recorded is not None else "",
        metadata=(("suite", job.case.suite), ("run_id", job.run_id)),
    )


def _is_timeout(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, httpx.TimeoutException):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _infra_failure(events: Sequence[Event]) -> str:
    """The last model call's failure if it was the provider's (5xx) or the wire's."""
    exchanges = [e for e in events if isinstance(e, Exchange)]
    if not exchanges:
        return ""
    last = exchanges[-1]
    if last.error is not None:
        return f"{last.error.type}: {last.error.message}"
    if last.response is not None and last.response.status >= 500:
        return f"provider HTTP {last.response.status} after retries"
    return ""


def run_job(job: Job, env: JobEnv) -> JobResult:
    """Run one attempt and score it.  Never raises for the agent's or provider's faults."""
    started = time.monotonic()
    session_id = new_session_id()
    header = _header(job, env, session_id)
    job.tape.parent.mkdir(parents=True, exist_ok=True)
    tee = _Tee(open_session(job.tape, header), header)
    replayer: ReplayTransport | None = None
    auth: list[str] = []
    if job.recorded is not None:
        replayer = ReplayTransport(job.recorded, strict=not env.lenient)
        inner: Any = replayer
    else:

        def on_retry(message: str) -> None:
            tee.append(RunnerFact(at=tee.now(), fact=FactKind.NOTE, message=message))

        def on_auth(message: str) -> None:
            auth.append(message)
            env.stop.set(StopKind.AUTH, f"the provider refused the credentials: {message}")

        inner = RetryingTransport(
            env.network,
            close_real=False,
            retries=env.retries,
            base_delay=env.retry_delay,
            on_retry=on_retry,
            on_auth=on_auth,
            stop=env.stop.event,
        )
    status, reason = Status.COMPLETED, ""
    workspace: Path | None = None
    try:
        workspace = make_workspace(job.case)
    except WorkspaceError as exc:
        status, reason = Status.INFRA_ERROR, str(exc)
    if workspace is not None:
        setup = AttemptSetup(
            case=job.case,
            model=job.model,
            attempt=job.attempt,
            workspace=workspace,
            base_url=env.base_url,
            upstream=env.base_url,
            seed=_seed(job, env),
            limit=env.hang_limit,
            inner=inner,
            events=tee,
            replaying=replayer is not None,
            environ={**env.environ, **dict(job.environ)},
        )
        status, reason = _drive(env, setup, tee, replayer)
        tee.append(snapshot_workspace(workspace, at=tee.now()))
        remove_workspace(workspace)
    stale = ""
    if replayer is not None and status is not Status.INTERRUPTED:
        try:
            replayer.finish()
        except ReplayError as exc:
            stale = str(exc)
    # Scored before the session ends, so the judge's call lands on this tape.
    provisional = fold(tee.provisional(status, reason))
    score = score_attempt(env.scorer, job.case, provisional)
    tape = fold(job.recorded.events) if job.recorded is not None else None
    score, judgement = _judge(job, env, tee, score, provisional, tape)
    events = tee.end(status, reason)
    duration = time.monotonic() - started
    session = fold(events)
    decision = None
    if tape is not None and status is not Status.INTERRUPTED:  # cancelled: no verdict
        rescored = score_attempt(env.scorer, job.case, tape)
        rescored, _ = rejudge_offline(rescored, job.case, tape, floors=env.floors)
        decision = decide(rescored, score, stale)
    broken = status in (Status.TIMEOUT, Status.INFRA_ERROR, Status.INTERRUPTED)
    # Live, replayed or reused, a verdict with no score leaves the attempt not judged.
    unscored = judgement is not None and judgement.state is JudgeState.UNSCORED
    if broken or stale:
        verdict = Verdict.ERROR
        why = f"stale recording: {stale}" if stale and not broken else f"{status.value}: {reason}"
    elif unscored and judgement is not None:
        verdict = Verdict.ERROR
        why = f"the judge gave no score: {judgement.problem}"
    else:
        verdict = Verdict.PASSED if score.passed else Verdict.FAILED
        why = "" if score.passed else score.reason
    if replayer is not None and replayer.tainted and not stale:
        why = (why + "; " if why else "") + f"lenient: {len(replayer.divergences)} divergence(s)"
    return JobResult(
        job=job,
        verdict=verdict,
        reason=why,
        usage=session.usage,
        duration=duration,
        session_id=session_id,
        status=status,
        score=score,
        tainted=broken
        or bool(stale)
        or unscored
        or bool(replayer is not None and replayer.tainted),
        decision=decision,
        auth_failure=bool(auth),
        judgement=judgement,
        judge_usage=judge_usage(session),
        cost=cost_of_session(env.prices, job.model, session),
        judge_cost=judge_cost_of_session(env.prices, session),
        outputs_digest=outputs_digest(session),
        effects_digest=effects_digest(session),
    )


def _judge(
    job: Job, env: JobEnv, tee: _Tee, score: Score, session: Session, tape: Session | None
) -> tuple[Score, Judgement | None]:
    """The judge step of a judged attempt that passed every deterministic check.

    Live: ask ``env.judge`` (recorded on this attempt's tape), or keep the
    "not configured" check.  Replay (``tape`` is the recorded session): reuse
    the verdict recorded for the same rubric and transcript; only with
    ``env.allow_live_judge`` is a judge asked when there is none.
    """
    if job.case.rubric is None or not score.passed:
        return score, None
    try:
        request = judge_request(job.case, session, read_rubric(job.case))
    except JudgeError as exc:
        check = Check(name="judge", passed=False, detail=str(exc))
        checks = (*(c for c in score.checks if c.name != "judge"), check)
        return Score(passed=False, reason=check.detail, checks=checks), None
    if tape is not None:
        judgement = reuse_judgement(request, tape)
        if judgement.state is not JudgeState.NOT_REJUDGED:
            tee.append(reused_event(judgement, tee.now()))
        elif env.judge is not None and env.allow_live_judge:
            judgement = env.judge.grade(request, tee, stop=env.stop.event)
    elif env.judge is not None:
        judgement = env.judge.grade(request, tee, stop=env.stop.event)
    else:
        judgement = Judgement(state=JudgeState.NOT_CONFIGURED, rubric=request.rubric)
    return with_judgement(score, judgement, env.floors), judgement


def _drive(
    env: JobEnv, setup: AttemptSetup, tee: _Tee, replayer: ReplayTransport | None
) -> tuple[Status, str]:
    """Run the agent in a daemon thread; watch the hang limit and the stop signal."""
    box: list[AgentOutcome] = []

    def target() -> None:
        try:
            if env.spec.kind is AgentKind.PYTHON:
                assert env.agent is not None
                box.append(run_python(env.agent, setup))
            else:
                box.append(run_command(env.spec.target, setup))
        except BaseException as exc:  # the agent must not take the runner down
            box.append(AgentOutcome(error=f"{type(exc).__name__}: {exc}", exception=exc))

    thread = threading.Thread(target=target, name=f"evaltape-agent-{setup.case.id}", daemon=True)
    started = time.monotonic()
    thread.start()
    while thread.is_alive():
        if env.stop.is_set():
            break
        left = env.hang_limit - (time.monotonic() - started)
        if left <= 0:
            break
        thread.join(min(POLL, left))
    if thread.is_alive() or not box:
        if env.stop.is_set():
            message = f"cancelled: {env.stop.reason}"
            tee.append(RunnerFact(at=tee.now(), fact=FactKind.INTERRUPT, message=message))
            return Status.INTERRUPTED, message
        message = f"the attempt passed the hang limit of {env.hang_limit:g} s"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.TIMEOUT, message=message))
        return Status.TIMEOUT, message
    outcome = box[0]
    if not outcome.error:
        return Status.COMPLETED, ""
    if env.stop.is_set() and env.stop.kind is not StopKind.LIMIT:
        message = f"cancelled: {env.stop.reason}"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.INTERRUPT, message=message))
        return Status.INTERRUPTED, message
    if _is_timeout(outcome.exception) or outcome.error.startswith("the agent ran past"):
        message = f"a model call passed the hang limit of {env.hang_limit:g} s ({outcome.error})"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.TIMEOUT, message=message))
        return Status.TIMEOUT, message
    if replayer is not None and replayer.misses:
        return Status.FAILED, outcome.error
    infra = _infra_failure(tee.events) if replayer is None else ""
    if infra or isinstance(outcome.exception, httpx.TransportError):
        message = f"{infra or outcome.error} (agent: {outcome.error})"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.INFRA_ERROR, message=message))
        return Status.INFRA_ERROR, message
    return Status.FAILED, f"the agent failed: {outcome.error}"


def _error_result(job: Job, exc: Exception) -> JobResult:
    score = Score(passed=False, reason=f"{type(exc).__name__}: {exc}")
    return JobResult(
        job=job,
        verdict=Verdict.ERROR,
        reason=f"the attempt could not run: {type(exc).__name__}: {exc}",
        usage=Usage(),
        duration=0.0,
        session_id="",
        status=Status.INFRA_ERROR,
        score=score,
        tainted=True,
    )


def _guarded(job: Job, env: JobEnv) -> JobResult | None:
    if env.stop.is_set():
        return None
    try:
        return run_job(job, env)
    except Exception as exc:  # a tape that cannot be written, a scorer's bug: this job only
        return _error_result(job, exc)


def score_attempt(scorer: Scorer, case: Case, session: Session) -> Score:
    """An attempt passes only if its session completed and ``scorer`` passes it.

    A session that ended failed (the agent raised or exited non-zero), timed
    out, was cancelled or has no end fails with that as its reason, whatever
    the scorer would say about the part that was recorded.
    """
    end = session.end
    if end is None or end.status is not Status.COMPLETED:
        detail = "the session has no end" if end is None else f"session {end.status.value}"
        if end is not None and end.reason:
            detail += f": {end.reason}"
        check = Check(name="completed", passed=False, detail=detail)
        return Score(passed=False, reason=detail, checks=(check,))
    return scorer(case, session)


def default_scorer() -> Scorer:
    """The scorer live and replay use unless told otherwise: ``score_session``."""
    return score_session


# -- planning ----------------------------------------------------------------


def cassette_tape(cassettes: Path, case: Case) -> tuple[Path, str]:
    """``<cassettes>/<suite>/<case id>.tape`` and its label relative to ``cassettes``."""
    label = f"{case.suite}/{case.id}.tape"
    return cassettes / label, label


def plan_live(
    suites: Sequence[Suite], models: Sequence[str], trials: int, cassettes: Path, run_id: str
) -> tuple[Job, ...]:
    """Every live job: model x case x attempt; a case pinning a model runs only with it."""
    jobs: list[Job] = []
    seen: set[tuple[str, str, int]] = set()
    for model in models:
        for suite in suites:
            for case in suite.cases:
                chosen = case.model or model
                for attempt in range(trials):
                    key = (case.id, chosen, attempt)
                    if key in seen:
                        continue
                    seen.add(key)
                    tape, label = cassette_tape(cassettes, case)
                    jobs.append(
                        Job(
                            case=case,
                            model=chosen,
                            attempt=attempt,
                            mode=RunKind.LIVE,
                            tape=tape,
                            tape_label=label,
                            run_id=run_id,
                        )
                    )
    return tuple(jobs)


def replay_tape(results: Path, run_id: str, case: Case) -> tuple[Path, str]:
    """``<results>/tapes/<run id>/<suite>/<case id>.tape`` and its label relative to results."""
    label = f"tapes/{run_id}/{case.suite}/{case.id}.tape"
    return results / label, label


def plan_replay(
    recorded: Iterable[tuple[Case, RecordedSession]], results: Path, run_id: str
) -> tuple[Job, ...]:
    """One replay job per recorded session, writing under the results folder."""
    jobs = []
    for case, session in recorded:
        tape, label = replay_tape(results, run_id, case)
        jobs.append(
            Job(
                case=case,
                model=session.header.model,
                attempt=session.header.attempt,
                mode=RunKind.REPLAY,
                tape=tape,
                tape_label=label,
                run_id=run_id,
                recorded=session,
            )
        )
    return tuple(jobs)


# -- the pool ----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PoolOutcome:
    """What ``run_pool`` did."""

    results: tuple[JobResult, ...]
    """Finished jobs, in the order they finished."""
    stopped: StopKind | None
    """Why the run stopped early, None if every job ran."""
    reason: str
    """The stop's one-line reason."""


def run_pool(
    jobs: Sequence[Job],
    env: JobEnv,
    *,
    concurrency: int,
    on_result: Callable[[JobResult], None] = lambda result: None,
    time_limit: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> PoolOutcome:
    """Run ``jobs`` ``concurrency`` at a time; Ctrl-C, 401/403 or ``time_limit`` stop early.

    ``on_result`` is called in this thread as each job finishes.  On a stop,
    jobs not yet started are dropped and running ones end as cancelled;
    finished ones are kept.
    """
    results: list[JobResult] = []
    started = clock()
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="evaltape-job")
    pending: set[Future[JobResult | None]] = {pool.submit(_guarded, job, env) for job in jobs}

    def collect(done: Iterable[Future[JobResult | None]]) -> None:
        for future in done:
            if future.cancelled():
                continue
            result = future.result()
            if result is not None:
                results.append(result)
                on_result(result)

    interrupts = 0
    while pending:
        try:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            collect(done)
            if time_limit is not None and clock() - started > time_limit:
                env.stop.set(StopKind.LIMIT, f"the overall time limit of {time_limit:g} s passed")
            if env.stop.is_set():
                for future in pending:
                    future.cancel()
        except KeyboardInterrupt:
            interrupts += 1
            env.stop.set(StopKind.INTERRUPT, "interrupted (Ctrl-C)")
            for future in pending:
                future.cancel()
            if interrupts > 1:
                break
    pool.shutdown(wait=interrupts < 2, cancel_futures=True)
    return PoolOutcome(results=tuple(results), stopped=env.stop.kind, reason=env.stop.reason)


# -- progress ----------------------------------------------------------------


class Progress:
    """``[k/total] model :: case (attempt n) PASS|FAIL|ERROR reason`` per finished attempt.

    On a terminal it also keeps a one-line bar at the bottom; elsewhere only
    the lines are written.
    """

    WIDTH = 30

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self, result: JobResult) -> str:
        """The line printed for ``result``."""
        self.done += 1
        job = result.job
        word = {Verdict.PASSED: "PASS", Verdict.FAILED: "FAIL"}.get(result.verdict, "ERROR")
        text = (
            f"[{self.done}/{self.total}] {job.model} :: {job.case.id} "
            f"(attempt {job.attempt + 1}) {word}"
        )
        if result.decision is not None and result.decision.change is not Change.UNCHANGED:
            text += f" {result.decision.change.value.upper()}"
        return text + (f" {result.reason}" if result.reason else "")

    def __call__(self, result: JobResult) -> None:
        text = self.line(result)
        if self.tty:
            filled = self.WIDTH * self.done // max(1, self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.stream.write(f"\r\x1b[K{text}\n[{bar}] {self.done}/{self.total}")
            if self.done >= self.total:
                self.stream.write("\r\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
