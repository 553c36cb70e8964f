"""Jobs and what they read and produce: one attempt is one job, a function of its inputs.

A ``Job`` names a case, a model, an attempt index, a mode (live or replay),
the tape its session is appended to and, in replay, the recorded session to
serve.  ``JobEnv`` is what every job of a run reads; the clock, the
environment and (live) the network transport are passed in, never read from
the process.  ``JobResult`` is what one job produced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import httpx

from evaltape.recorder import Exchange, RecordedSession, Session, Source, Status, Usage
from evaltape.recorder._shared import PackedSession
from evaltape.recorder.redact import Redactor, ScrubRule, default_redactor
from evaltape.replay import Route

from ..cases._cases import Case
from ..checks._score import Score, Scorer
from ..cost._costs import CostBreakdown
from ..cost._pricing import Prices, built_in_prices
from ..judge._judge import Judge
from ..judge._judgement import Floors, Judgement
from ..results._records import AttemptResult, RunKind, Verdict
from ..sandbox import Sandbox
from ..verdicts._replaycheck import Change, ReplayDecision
from ._finished import Attempt
from ._stop import Stop
from .attempt._agents import AgentSpec
from .attempt._task import Agent

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the agent's model calls go when neither config nor flag names a base URL."""


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
    packed: PackedSession | None = attrs.field(default=None, eq=False, repr=False)
    """Replay: the same session still compressed, as its tape stores it; what is shipped to
    another process, which decodes it into ``recorded`` there."""
    environ: tuple[tuple[str, str], ...] = ()
    """Environment overrides for this attempt only (an A/B variant's ``env:K=V``), laid
    over ``JobEnv.environ``; never written to the tape.  ``os.environ`` is never changed."""
    confirmation: bool = False
    """A gate's confirmation re-run of a case that broke (``AttemptResult.confirmation``)."""
    label: SourceLabel | None = None
    """Live: where this attempt's responses come from, when it is not the run's
    ``LiveWire.source`` (a re-recorded session keeps its recording's)."""
    prefix: Prefix | None = None
    """Live from a turn (``rerecord --from-turn``): the recorded calls served before it."""


@attrs.frozen(kw_only=True)
class Prefix:
    """The recorded turns a live attempt is served before it goes live.

    Their requests were identical in the replay that found the session stale,
    so the recorded answers are samples from the same inputs: serving them is
    exact.  Each request must still match its recorded one when the attempt
    runs, or the attempt fails (its recorded session is kept).
    """

    session_id: str
    """The recorded session the turns come from."""
    exchanges: tuple[Exchange, ...]
    """Its exchanges of turns 1..k-1, in order."""
    seed: int | None = None
    """The recorded session's seed, so the agent sends the recorded requests."""


@attrs.frozen(kw_only=True)
class SourceLabel:
    """Where a live session's responses come from, as its header records it."""

    source: Source
    """``real_api``, ``local_server`` or ``simulated``."""
    detail: str = ""
    """Free text naming server and model."""


@attrs.frozen(kw_only=True)
class LiveWire:
    """What only live jobs read: the network, where responses come from, retries, the seed."""

    network: httpx.BaseTransport
    """The network transport every attempt borrows (connection pool, TLS context)."""
    source: Source = Source.REAL_API
    """Where live responses come from, as each session header records it."""
    source_detail: str = ""
    """Free text naming server and model."""
    seed: int | None = None
    """Sampling seed, if any; attempt ``n`` gets ``seed + n``."""
    retries: int = 4
    """Retries of a 429, 5xx or connection failure below the recording transport."""
    retry_delay: float = 0.5
    """First backoff in seconds when the provider gives no retry-after."""


@attrs.frozen(kw_only=True)
class ReplayRules:
    """What only replay jobs read."""

    lenient: bool = False
    """Serve the nearest recorded response instead of failing on a changed request: the
    attempt goes on as if the model had answered as recorded (``--assume-same-model``)."""
    allow_live_judge: bool = False
    """Ask ``JobEnv.judge`` when the tape holds no verdict for the replayed transcript."""


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
    wall_clock: Callable[[], float]
    """Unix time, for session headers."""
    environ: Mapping[str, str] = attrs.field(repr=False)
    """The environment agents see (captured when the run started); each job's overrides go
    on top."""
    base_url: str = DEFAULT_BASE_URL
    """The model API's base URL."""
    hang_limit: float = 300.0
    """Seconds an attempt may run."""
    harness_commit: str = ""
    """Short git commit of the harness."""
    harness_version: str = ""
    """Version of the harness."""
    judge: Judge | None = None
    """Grades judged attempts that passed every other check; None: not configured."""
    floors: Floors = attrs.field(factory=Floors)
    """Judge score floors: a trial below ``floors.trial`` fails."""
    prices: Prices = attrs.field(factory=built_in_prices, repr=False)
    """Prices the agent's and the judge's calls are costed with (built-in table by default)."""
    live: LiveWire | None = None
    """Live jobs: the network and its settings; a live job without it cannot run."""
    replay: ReplayRules = attrs.field(factory=ReplayRules)
    """Replay jobs: leniency and whether the judge may be asked."""
    scrub: tuple[ScrubRule, ...] = ()
    """User scrub rules for request bodies (the workspace path is always scrubbed)."""
    redactor: Redactor = attrs.field(factory=default_redactor, repr=False)
    """Masks secrets in everything a job writes: the built-in rules plus the values of
    the environment's key-like variables (see ``job_env``)."""
    sandbox: Sandbox = attrs.field(factory=Sandbox.find, repr=False)
    """Where verify commands and the agent's tools run (``Task.sandbox``)."""
    upstreams: tuple[Route, ...] = ()
    """Providers' base URLs for command agents besides ``base_url`` (``--upstream``)."""
    workspaces: Path | None = None
    """The folder each attempt's workspace is made in (``run_workspaces``); None: the
    system's temporary folder."""


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
    judgement: Judgement | None = None
    """A judged attempt that passed every other check: what the judge said (or why not)."""
    judge_usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge spent grading this attempt; never part of ``usage``."""
    cost: CostBreakdown = attrs.field(factory=CostBreakdown)
    """The agent's model calls by token bucket, and their USD (None when unknown)."""
    judge_cost: CostBreakdown = attrs.field(factory=CostBreakdown)
    """The judge's calls grading this attempt, priced apart; never part of ``cost``."""
    recorded_cost: CostBreakdown | None = None
    """Replay: the agent's calls in the recorded session, priced with today's table (what
    they cost when recorded, whatever the replay served); None for a live attempt."""
    outputs_digest: str = ""
    """``scoring._flips.outputs_digest`` of the session; "" when it never started."""
    effects_digest: str = ""
    """``scoring._flips.effects_digest`` of the session; "" when it never started."""
    session: Session | None = attrs.field(default=None, eq=False, repr=False)
    """The attempt's Session view, folded once as it was recorded, for every output of
    the run that reads it (export, cassette updates); None when no session was made, or
    when the attempt ran in another process (its session is then read from the tape:
    it never travels back)."""

    def finished(self) -> Attempt:
        """The public value of this attempt (without its session)."""
        job = self.job
        return Attempt(
            case=job.case,
            model=job.model,
            attempt=job.attempt,
            confirmation=job.confirmation,
            tape=job.tape,
            session_id=self.session_id,
            status=self.status,
            verdict=self.verdict,
            reason=self.reason,
            tainted=self.tainted,
            duration=self.duration,
            score=self.score,
            judgement=self.judgement,
            decision=self.decision,
            usage=self.usage,
            judge_usage=self.judge_usage,
            cost=self.cost,
            judge_cost=self.judge_cost,
            recorded_cost=self.recorded_cost,
            record=self.attempt_result(),
        )

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
            if d and d.replayed and d.change not in (Change.STALE, Change.CHANGED)
            else None,
            change=d.change.value if d else "",
            change_detail=d.detail if d and d.harness is not None else "",
            change_diff=d.harness.diff if d and d.harness is not None else (),
            judge_usage=self.judge_usage,
            cost=self.cost.cost,
            judge_cost=self.judge_cost.cost if self.judge_cost.calls else None,
            judge_score=self.judgement.score if self.judgement is not None else None,
            fingerprint=self.job.case.fingerprint,
            outputs_digest=self.outputs_digest,
            effects_digest=self.effects_digest,
            confirmation=self.job.confirmation,
        )


def _verdict(score: Score | None) -> Verdict | None:
    if score is None:
        return None
    return Verdict.PASSED if score.passed else Verdict.FAILED


def error_result(job: Job, exc: Exception) -> JobResult:
    """The result of a job that could not run at all (verdict error, tainted)."""
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
