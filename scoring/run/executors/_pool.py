"""The pool: model x case x attempt through one thread pool.

Jobs share nothing but read-only inputs and the run-wide ``Stop`` signal, so
comparing two models takes about as long as running one.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from evaltape.recorder import TapeError
from evaltape.recorder.tape import discard_journal

from .._budget import Budget
from .._finished import Attempt, PoolOutcome
from .._jobs import Job, JobEnv, JobResult
from .._stop import StopKind
from ..attempt._attempt import Computed, write_job
from ._executor import ExecutorFactory, Guard, thread_executor

STOP_SIGNALS: dict[signal.Signals, str] = {
    signal.SIGINT: "Ctrl-C",
    signal.SIGTERM: "SIGTERM",
    signal.SIGHUP: "SIGHUP",
}
"""The signals that stop a run like Ctrl-C (a CI runner cancels with SIGTERM), and the
name each stop reason gives."""


class _CtrlC:
    """Counts Ctrl-C presses while the pool runs, instead of raising ``KeyboardInterrupt``.

    SIGTERM and SIGHUP count the same way (``STOP_SIGNALS``); ``name`` is the
    first signal's.

    An exception raised at an arbitrary point of the waiting thread can leave a
    future's lock held (inside ``concurrent.futures.wait``), and the worker that
    finishes that future then blocks for ever.  While the pool runs, SIGINT only
    counts; the loop turns the first press into the stop signal and a second one
    into "stop waiting".  Off the main thread no handler can be installed, and a
    ``KeyboardInterrupt`` is counted where it lands.
    """

    def __init__(self) -> None:
        self.count = 0
        self.name = STOP_SIGNALS[signal.SIGINT]
        self._previous: dict[signal.Signals, Any] = {}

    def _press(self, signum: int, frame: object) -> None:
        if not self.count:
            self.name = STOP_SIGNALS.get(signal.Signals(signum), self.name)
        self.count += 1

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._press)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def _superseded(computed: Computed, result: JobResult) -> None:
    """The session is whole on its tape and reported (``on_result`` put it in the run
    record): its journal is not needed any more.  A session the tape refused keeps it."""
    if computed.data and result is computed.result:
        # A journal left over (not deletable) holds a session whole on its tape: never
        # recovered twice, ``evaltape recover`` only deletes it.
        with contextlib.suppress(TapeError):
            discard_journal(result.job.tape, result.session_id)


def run_pool(
    jobs: Sequence[Job],
    env: JobEnv,
    *,
    concurrency: int,
    on_result: Callable[[JobResult], None] = lambda result: None,
    time_limit: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    budget: Budget | None = None,
    executor: ExecutorFactory = thread_executor,
    on_stop: Callable[[str], None] = lambda line: None,
) -> PoolOutcome:
    """Run ``jobs`` ``concurrency`` at a time; Ctrl-C, 401/403 or ``time_limit`` stop early.

    ``on_result`` is called in this thread as each job finishes.  On a stop,
    jobs not yet started are dropped and running ones end as cancelled;
    finished ones are kept.  With a ``budget``, jobs start only while the
    spent cost is below it; the rest are counted in ``not_started``.  ``executor``
    computes the jobs (threads of this process by default); their sessions are
    written to the tapes here, as each is collected, and their journals deleted once
    ``on_result`` has returned.  ``on_stop`` gets one line when a signal stops the
    run: running attempts then end once their agents stop (their new model calls
    are refused), and a second signal stops waiting.
    """
    results: list[Attempt] = []
    started = clock()
    pool = executor(env, max(1, concurrency), Guard(env=env, budget=budget))
    for job in jobs:
        pool.submit(job)

    ctrl_c = _CtrlC()
    with ctrl_c:
        while pool.outstanding():
            try:
                if ctrl_c.count and not env.stop.is_set():
                    env.stop.set(
                        StopKind.INTERRUPT, f"interrupted ({ctrl_c.name})", cause=ctrl_c.name
                    )
                    on_stop(
                        f"evaltape: stopping ({ctrl_c.name}): no new model calls are sent; "
                        f"waiting for the running attempts to end ({ctrl_c.name} again stops "
                        "waiting)"
                    )
                if ctrl_c.count > 1:
                    break
                for computed in pool.collect(timeout=0.1):
                    result = write_job(computed)
                    # The run keeps the attempt, not its session: only the outputs made
                    # as it finishes (``on_result``: export, cassettes) read the session.
                    results.append(result.finished())
                    on_result(result)
                    _superseded(computed, result)
                if time_limit is not None and clock() - started > time_limit:
                    env.stop.set(
                        StopKind.LIMIT, f"the overall time limit of {time_limit:g} s passed"
                    )
                if env.stop.is_set():
                    pool.cancel()
            except KeyboardInterrupt:  # no handler of ours (not the main thread)
                ctrl_c.count += 1
    pool.close(wait=ctrl_c.count < 2)
    skipped = 0 if budget is None or env.stop.is_set() else len(jobs) - len(results)
    return PoolOutcome(
        results=tuple(results),
        stopped=env.stop.kind,
        reason=env.stop.reason,
        not_started=skipped,
    )
