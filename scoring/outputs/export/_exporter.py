"""Export attempts in the background, off the run's critical path.

The run hands each scored attempt to ``Exporter.submit`` as it finishes; one
worker thread reads the attempt's session back from its tape, builds its
trace (``_spans``), turns it into OpenTelemetry SDK spans (``_sdk_spans``),
sends them with the SDK's OTLP/HTTP exporter (``_traces_out``) and, for
Langfuse, posts the scores not yet delivered (``_langfuse``).  Each attempt's
``Delivered`` is handed to ``on_delivered`` as soon as it is known (so a
caller can write it down before the next attempt) and collected for
``close(timeout)``, which waits at most that long and reports them all.

The first failure (collector down, a 4xx, a timeout, retries used up) is
handed to ``on_failure`` once and stops exporting for the rest of the run:
the attempts left unexported can be sent later with ``evaltape export RUN``.
Nothing here ever raises into the run.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import httpx

from evaltape.recorder import Session, TapeError, TapeReader, fold

from ...checks._score import Score
from ...cost._pricing import Prices
from ...judge._judgement import Judgement
from ...results._records import AttemptResult
from ._config import ExportConfig
from ._langfuse import post_score, score_bodies
from ._progress import Delivered
from ._sdk_spans import resource, sdk_spans
from ._send import DEFAULT_BACKOFF, Backoff, ExportFailed, Sender
from ._span_model import AttemptTrace, TraceOptions
from ._spans import attempt_trace
from ._traces_out import TraceSender

DEFAULT_CLOSE_TIMEOUT = 30.0
"""Seconds a run waits at its end for exports still under way."""


@attrs.frozen(kw_only=True)
class ExportJob:
    """One attempt to export: its record line, its tape and, when known, its score."""

    attempt: AttemptResult
    """The attempt's run-record line (verdict, usage, cost, session id)."""
    tape: Path
    """The tape holding its session."""
    score: Score | None = None
    """Its score with every check; None lets ``Exporter.rescore`` compute it."""
    judgement: Judgement | None = None
    """What the judge said, for a judged attempt."""
    spans_sent: bool = False
    """Its spans were delivered before: only scores are missing."""
    scores_sent: tuple[str, ...] = ()
    """Names of its scores delivered before (not sent again)."""
    session: Session | None = attrs.field(default=None, eq=False, repr=False)
    """Its Session view as the run folded it; None: read from ``tape`` when exported."""


HELD_SESSIONS = 16
"""Queued jobs that keep their folded session: past this many (a slow endpoint, a fast
replay) a job is queued without it and its session is read from the tape when its turn
comes, so a queue never holds more than this many decoded sessions."""


Rescore = Callable[[AttemptResult, Session], tuple[Score | None, Judgement | None]]
"""Scores an attempt's session again when the job carries no score."""


@attrs.frozen(kw_only=True)
class ExportReport:
    """What an exporter did."""

    delivered: tuple[Delivered, ...]
    """Every attempt that got anywhere (spans, or spans and scores), in delivery order."""
    scores: int
    """Scores posted (Langfuse only)."""
    skipped: tuple[str, ...]
    """One line per attempt that could not be built (tape or session missing)."""
    failure: str
    """The first delivery failure, one line; "" when none."""
    unfinished: int
    """Attempts still queued or under way when ``close`` stopped waiting."""

    @property
    def exported(self) -> tuple[str, ...]:
        """Keys of the attempts whose spans and every score were delivered."""
        return tuple(d.key for d in self.delivered if d.complete)


def load_session(tape: Path, session_id: str) -> Session | str:
    """The folded session ``session_id`` of ``tape``, or why it cannot be had."""
    try:
        for recorded in TapeReader(tape, strict=False).sessions():
            if recorded.session_id == session_id:
                return fold(recorded.events)
    except (TapeError, OSError) as exc:
        return f"{tape}: {exc}"
    except ValueError as exc:
        return f"{tape}: session {session_id}: {exc}"
    return f"{tape}: no session {session_id}"


class Exporter:
    """A background worker that exports attempts to one ``ExportConfig`` target."""

    def __init__(
        self,
        config: ExportConfig,
        options: TraceOptions,
        prices: Prices,
        *,
        on_failure: Callable[[ExportFailed], None] = lambda failure: None,
        on_delivered: Callable[[Delivered], None] = lambda delivered: None,
        rescore: Rescore | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        self.options = options
        self.prices = prices
        self._on_failure = on_failure
        self._on_delivered = on_delivered
        self._rescore = rescore
        self._client = httpx.Client(transport=transport, follow_redirects=False)
        self._sender = Sender(self._client, backoff=backoff, sleep=sleep)
        self._traces = TraceSender(config.traces)
        self._queue: queue.Queue[ExportJob | None] = queue.Queue()
        self._lock = threading.Lock()
        self._delivered: list[Delivered] = []
        self._skipped: list[str] = []
        self._scores = 0
        self._failure: ExportFailed | None = None
        self._pending = 0
        self._thread = threading.Thread(target=self._work, name="evaltape-export", daemon=True)
        self._thread.start()

    def submit(self, job: ExportJob) -> None:
        """Queue one attempt; returns at once."""
        with self._lock:
            self._pending += 1
            if job.session is not None and self._pending > HELD_SESSIONS:
                job = attrs.evolve(job, session=None)
        self._queue.put(job)

    def close(self, timeout: float | None = DEFAULT_CLOSE_TIMEOUT) -> ExportReport:
        """Wait up to ``timeout`` seconds (None: no limit) for queued exports; report."""
        self._queue.put(None)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._client.close()
            self._traces.close()
        with self._lock:
            return ExportReport(
                delivered=tuple(self._delivered),
                scores=self._scores,
                skipped=tuple(self._skipped),
                failure=str(self._failure) if self._failure is not None else "",
                unfinished=self._pending,
            )

    def build(self, job: ExportJob) -> AttemptTrace | str:
        """The trace of ``job``, or why it cannot be built."""
        session = job.session or load_session(job.tape, job.attempt.session_id)
        if isinstance(session, str):
            return session
        score, judgement = job.score, job.judgement
        if score is None and self._rescore is not None:
            score, judgement = self._rescore(job.attempt, session)
        return attempt_trace(job.attempt, session, score, judgement, self.options, self.prices)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                self._export(job)
            except Exception as exc:  # a bug here must never reach the run
                with self._lock:
                    self._skipped.append(f"{job.attempt.tape}: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._pending -= 1

    def _export(self, job: ExportJob) -> None:
        if self._failure is not None:
            return
        built = self.build(job)
        if isinstance(built, str):
            with self._lock:
                self._skipped.append(built)
            return
        spans, sent = job.spans_sent, list(job.scores_sent)
        try:
            if not spans:
                res = resource(
                    self.config.resource, environment=built.environment, release=built.release
                )
                self._traces.send(sdk_spans(built.spans, res))
                spans = True
            if self.config.scores is not None:
                for body in score_bodies(built):
                    name = str(body["name"])
                    if name not in sent:
                        post_score(self._sender, self.config.scores, body)
                        sent.append(name)
                        with self._lock:
                            self._scores += 1
            complete = True
        except ExportFailed as exc:
            complete = False
            with self._lock:
                first = self._failure is None
                self._failure = exc
            if first:
                self._on_failure(exc)
        if spans:
            done = Delivered(key=built.key, spans=True, scores=tuple(sent), complete=complete)
            with self._lock:
                self._delivered.append(done)
            self._on_delivered(done)
