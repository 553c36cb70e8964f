"""``run_job``: one attempt in a fresh workspace, its session written and scored.

The attempt is computed first (``compute_job``: the session is encoded in
memory) and then written (``write_job``: its bytes appended to the tape), so
the two can happen in different processes: an executor's worker computes, the
run's driver alone writes tapes.  Meanwhile every event goes to the session's
journal as it happens (``journal``: a file beside the tape, written by the
driver), so a killed driver loses at most the event in flight; the pool
deletes the journal once the whole session is on the tape and in the record.

The session gets its start, the exchanges, runner facts, the workspace
snapshot and its end.  It is scored (and judged) before it ends, so the
judge's call lands on the attempt's own tape.  A replay job is also scored
as recorded, and the two verdicts give its ``ReplayDecision``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from evaltape.recorder import (
    FactKind,
    Mode,
    RunnerFact,
    Scalar,
    SessionStarted,
    Status,
    TapeError,
    fold,
)
from evaltape.recorder._shared import given_values, workspace_spellings
from evaltape.recorder.redact import Scrubber
from evaltape.recorder.tape import (
    Journal,
    SessionBuffer,
    Sink,
    append_session,
    journal_path,
    new_session_id,
)
from evaltape.replay import ReplayTransport

from ..._network import RetryingTransport
from ...cost._costs import (
    REPLAYED_FROM,
    REPLAYED_TURNS,
    cost_of_session,
    judge_cost_of_session,
)
from ...judge._judgement import JudgeState
from ...judge._reuse import judge_usage, rejudge_offline
from ...results._records import Verdict
from ...verdicts._flips import effects_digest, outputs_digest
from ...verdicts._replaycheck import decide
from .._jobs import Job, JobEnv, JobResult, LiveWire, Prefix, error_result
from .._stop import StopKind
from ._agents import AttemptSetup
from ._judge_step import judge_step, score_attempt
from ._prefix import PrefixThenLive
from ._replay_miss import (
    BASE_URL_KEY,
    nothing_to_replay,
    recorded_base_url,
    replay_changes,
)
from ._supervise import drive
from ._tee import Tee
from ._workspace import (
    WorkspaceError,
    make_workspace,
    remove_workspace,
    snapshot_workspace,
)

LIVE_LEVEL = 18
"""zstd level of a live attempt's session.  It is compressed once, when the attempt
ends, and its tape is what later replays and rescores read, so it gets zstd's
optimal parser: on coding-agent sessions 4-8% smaller than level 9 (the most at 500
turns), for about 50 ms of CPU at the end of a 25-turn attempt and 1 s at the end of
a 500-turn one, which spent its time waiting on a model (docs/performance.md,
*What is left*).  A replay attempt's session is made again on every run, so it
stays at the buffer's default level."""


def _seed(job: Job, env: JobEnv) -> int | None:
    """The seed of this attempt: ``--seed`` plus the attempt index, so trials are
    distinct samples yet reproducible.  A replay hands the agent the recorded
    seed, so it sends the recorded request."""
    if job.recorded is not None:
        return job.recorded.header.seed
    if job.prefix is not None:
        return job.prefix.seed
    seed = env.live.seed if env.live is not None else None
    return None if seed is None else seed + job.attempt


def _replayed(prefix: Prefix) -> tuple[tuple[str, Scalar], ...]:
    """The header metadata of a session re-recorded from a turn: which turns were served."""
    return ((REPLAYED_TURNS, len(prefix.exchanges)), (REPLAYED_FROM, prefix.session_id))


def _header(job: Job, env: JobEnv, session_id: str) -> SessionStarted:
    if job.recorded is not None:
        source, detail = job.recorded.header.source, job.recorded.header.source_detail
    elif job.label is not None:
        source, detail = job.label.source, job.label.detail
    else:
        assert env.live is not None
        source, detail = env.live.source, env.live.source_detail
    return SessionStarted(
        session_id=session_id,
        started_at=env.wall_clock(),
        case_id=job.case.id,
        attempt=job.attempt,
        model=job.model,
        mode=Mode.REPLAY if job.recorded is not None else Mode.LIVE,
        source=source,
        source_detail=detail,
        harness_commit=env.harness_commit,
        harness_version=env.harness_version,
        seed=_seed(job, env),
        replay_of=job.recorded.session_id if job.recorded is not None else "",
        metadata=(
            ("suite", job.case.suite),
            ("run_id", job.run_id),
            *(((BASE_URL_KEY, env.base_url),) if job.recorded is None else ()),
            *(_replayed(job.prefix) if job.prefix is not None else ()),
        ),
    )


def _live_transport(env: JobEnv, wire: LiveWire, tee: Tee) -> RetryingTransport:
    def on_retry(message: str) -> None:
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.NOTE, message=message))

    def on_auth(message: str) -> None:
        env.stop.set(StopKind.AUTH, f"the provider refused the credentials: {message}")

    return RetryingTransport(
        wire.network,
        close_real=False,
        retries=wire.retries,
        base_delay=wire.retry_delay,
        on_retry=on_retry,
        on_auth=on_auth,
        stop=env.stop.event,
        refusal=env.stop.refusal,
    )


def with_overrides_masked(env: JobEnv, job: Job) -> JobEnv:
    """``env`` whose redactor also masks the values of the job's environment overrides (an
    A/B variant's ``env:K=V``): the agent gets them, so its requests, files and errors
    may carry them, whatever their names or shapes."""
    values = given_values(value for _, value in job.environ)
    if not values:
        return env
    return attrs.evolve(env, redactor=env.redactor.extended(values=values))


JournalOpener = Callable[[Job, SessionStarted], Sink]
"""Opens the journal of a job's new session (given its header): where each packed event
goes the moment it is taken."""


def file_journal(job: Job, header: SessionStarted) -> Sink:
    """The session's journal file beside the job's tape (``journal_path``)."""
    return Journal(journal_path(job.tape, header.session_id), header.session_id)


@attrs.frozen(kw_only=True)
class Computed:
    """One attempt computed but not yet written: its result and its session's tape bytes."""

    result: JobResult
    """The attempt's result (``session_id`` names the session in ``data``)."""
    data: bytes = attrs.field(repr=False)
    """The whole session as tape frames (``SessionBuffer.data``); b"" when none was made."""


def write_job(computed: Computed) -> JobResult:
    """Append the computed session to its job's tape; the result, or an error result when
    the tape cannot be written."""
    job = computed.result.job
    if not computed.data:
        return computed.result
    try:
        job.tape.parent.mkdir(parents=True, exist_ok=True)
        append_session(job.tape, computed.data)
    except (TapeError, OSError) as exc:
        return error_result(job, exc)
    return computed.result


def run_job(job: Job, env: JobEnv) -> JobResult:
    """Run one attempt, score it and write its session (``compute_job`` then ``write_job``)."""
    return write_job(compute_job(job, env))


def compute_job(job: Job, env: JobEnv, journal: JournalOpener | None = None) -> Computed:
    """Run one attempt and score it, its session encoded in memory and, with ``journal``,
    each event handed to the session's journal as it is taken; the tape is not written.

    Never raises for the agent's or provider's faults (a journal that cannot be opened
    leaves the attempt without one).  A live job needs ``env.live``; without it
    ``ValueError`` is raised.
    """
    if job.recorded is None and env.live is None:
        raise ValueError("a live job needs JobEnv.live (the network transport)")
    env = with_overrides_masked(env, job)
    started = time.monotonic()
    session_id = new_session_id()
    header = env.redactor.redact_event(_header(job, env, session_id))
    assert isinstance(header, SessionStarted)
    sink: Sink | None = None
    if journal is not None:
        try:
            sink = journal(job, header)
        except TapeError:
            sink = None  # the attempt still runs; its session is whole on the tape at the end
    if job.recorded is None:
        buffer = SessionBuffer(header, level=LIVE_LEVEL, sink=sink)
    else:
        buffer = SessionBuffer(header, sink=sink)
    tee = Tee(buffer, header, env.redactor)
    replayer: ReplayTransport | None = None
    status, reason = Status.COMPLETED, ""
    workspace: Path | None = None
    try:
        workspace = make_workspace(job.case, parent=env.workspaces)
    except WorkspaceError as exc:
        status, reason = Status.INFRA_ERROR, str(exc)
    if workspace is not None:
        scrubber = Scrubber(
            redactor=env.redactor,
            workspace=workspace_spellings(str(workspace)),
            rules=env.scrub,
            home=env.environ.get("HOME", ""),
        )
        inner: Any
        if job.recorded is not None:
            # Past a changed request the harness is served the recorded responses, so the
            # whole session is classified: a prompt edit never hides a changed tool.
            replayer = ReplayTransport(
                job.recorded, strict=not env.replay.lenient, keep_going=True, scrubber=scrubber
            )
            inner = replayer
        else:
            assert env.live is not None
            inner = _live_transport(env, env.live, tee)
            if job.prefix is not None:
                served = ReplayTransport(
                    job.prefix.exchanges, session_id=job.prefix.session_id, scrubber=scrubber
                )
                inner = PrefixThenLive(served, inner)
        base_url = env.base_url if job.recorded is None else recorded_base_url(job.recorded, env)
        # The command agent's proxy forwards under the same path in replay as live.
        setup = AttemptSetup(
            case=job.case,
            model=job.model,
            attempt=job.attempt,
            workspace=workspace,
            base_url=base_url,
            upstream=base_url,
            routes=env.upstreams,
            seed=_seed(job, env),
            limit=env.hang_limit,
            inner=inner,
            events=tee,
            replaying=replayer is not None,
            environ={**env.environ, **dict(job.environ)},
            redactor=scrubber,
            sandbox=env.sandbox,
        )
        status, reason = drive(env, setup, tee, replayer)
        reason = env.redactor.redact_text(reason)
        tee.append(snapshot_workspace(workspace, at=tee.now()))
        remove_workspace(workspace)
    changes = replay_changes(replayer, status, reason, job.recorded) if job.recorded else ()
    stale = ""
    if changes and not env.replay.lenient:
        more = len(changes) - 1
        stale = changes[0].summary + (f" (+{more} more)" if more else "")
    # Scored before the session ends, so the judge's call lands on this tape.
    provisional = tee.provisional(status, reason)
    score = score_attempt(env.scorer, job.case, provisional)
    tape = fold(job.recorded.events) if job.recorded is not None else None
    score, judgement = judge_step(job, env, tee, score, provisional, tape)
    session = tee.end(status, reason)
    duration = time.monotonic() - started
    decision = None
    if tape is not None and status is not Status.INTERRUPTED:  # cancelled: no verdict
        rescored = score_attempt(env.scorer, job.case, tape)
        rescored, _ = rejudge_offline(rescored, job.case, tape, floors=env.floors)
        untested = reason if workspace is None else nothing_to_replay(replayer)
        decision = decide(
            rescored, score, changes=changes, assumed=env.replay.lenient, untested=untested
        )
    broken = status in (Status.TIMEOUT, Status.INFRA_ERROR, Status.INTERRUPTED)
    # Live, replayed or reused, a verdict with no score leaves the attempt not judged.
    unscored = judgement is not None and judgement.state is JudgeState.UNSCORED
    if broken or stale:
        verdict = Verdict.ERROR
        why = stale if stale and not broken else f"{status.value}: {reason}"
    elif unscored and judgement is not None:
        verdict = Verdict.ERROR
        why = f"the judge gave no score: {judgement.problem}"
    else:
        verdict = Verdict.PASSED if score.passed else Verdict.FAILED
        why = "" if score.passed else score.reason
    lenient = env.replay.lenient and replayer is not None and replayer.tainted
    if lenient and not stale:
        assert replayer is not None
        why = (why + "; " if why else "") + (
            f"assuming the model answered as recorded: {len(replayer.divergences)} changed "
            "request(s) served the recorded response"
        )
    result = JobResult(
        job=job,
        verdict=verdict,
        reason=env.redactor.redact_text(why),
        usage=session.usage,
        duration=duration,
        session_id=session_id,
        status=status,
        score=score,
        tainted=broken or bool(stale) or unscored or lenient,
        decision=decision,
        judgement=judgement,
        judge_usage=judge_usage(session),
        cost=cost_of_session(env.prices, job.model, session),
        judge_cost=judge_cost_of_session(env.prices, session),
        recorded_cost=None if tape is None else cost_of_session(env.prices, job.model, tape),
        outputs_digest=outputs_digest(session),
        effects_digest=effects_digest(session),
        session=session,
    )
    return Computed(result=result, data=buffer.data)
