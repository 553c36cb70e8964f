"""Where a run's jobs are computed: the executor seam, and the thread executor.

The pool hands every job (planned or added late) to an ``Executor``; the
executor computes it somewhere (a thread of this process, a Ray worker) and
hands back ``Computed`` values: the result and the session's tape bytes.  The
pool alone writes tapes, so an executor never needs the run's files.

A ``Guard`` is asked before a job starts (the stop signal, the budget) and
told when it finished (the budget's charge); an executor calls it where the
job starts, so a budget stays exact however the jobs are spread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

import attrs

from .._budget import Budget
from .._jobs import Job, JobEnv, JobResult, error_result
from ..attempt._attempt import Computed, compute_job, file_journal


@attrs.frozen(kw_only=True)
class Guard:
    """Whether a job may start, and what a finished job is charged."""

    env: JobEnv
    """The run's jobs' environment (its stop signal)."""
    budget: Budget | None = None
    """The run's spending limit, if any."""

    def admits(self) -> bool:
        """True unless the run stopped or the budget is spent."""
        return not self.env.stop.is_set() and (self.budget is None or self.budget.admits())

    def charge(self, result: JobResult) -> None:
        """Add the finished job's cost to the budget."""
        if self.budget is not None:
            self.budget.charge(result)


class Executor(Protocol):
    """Computes jobs somewhere and hands back what they produced."""

    def submit(self, job: Job) -> None:
        """Queue ``job``; it starts when a slot is free and the guard admits it."""

    def collect(self, timeout: float) -> tuple[Computed, ...]:
        """Jobs finished since the last call, waiting up to ``timeout`` seconds for one."""

    def outstanding(self) -> int:
        """Jobs submitted and neither collected nor dropped."""

    def cancel(self) -> None:
        """The run stopped: drop the jobs not started (running ones end as they can)."""

    def close(self, *, wait: bool) -> None:
        """Release the executor's workers (``wait``: let running jobs end first)."""


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


ExecutorFactory = Callable[[JobEnv, int, Guard], Executor]
"""Makes a run's executor from its jobs' environment, the concurrency and the guard."""


def guarded_compute(job: Job, env: JobEnv, guard: Guard) -> Computed | None:
    """Compute ``job`` if the guard admits it (None when not), its session journalled to
    a file beside its tape as it goes; a job that raises (a scorer's bug) gets an error
    result."""
    if not guard.admits():
        return None
    try:
        computed = compute_job(job, env, journal=file_journal)
    except Exception as exc:
        computed = Computed(result=error_result(job, exc), data=b"")
    guard.charge(computed.result)
    return computed


class ThreadExecutor:
    """Computes jobs ``concurrency`` at a time in threads of this process (the default)."""

    def __init__(self, env: JobEnv, concurrency: int, guard: Guard) -> None:
        self._env = env
        self._guard = guard
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, concurrency), thread_name_prefix="evaltape-job"
        )
        self._pending: set[Future[Computed | None]] = set()

    def submit(self, job: Job) -> None:
        """Queue ``job`` on the thread pool."""
        self._pending.add(self._pool.submit(guarded_compute, job, self._env, self._guard))

    def collect(self, timeout: float) -> tuple[Computed, ...]:
        """Finished jobs (skipped and cancelled ones are dropped)."""
        if not self._pending:
            return ()
        done, self._pending = wait(self._pending, timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for future in done:
            if future.cancelled():
                continue
            computed = future.result()
            if computed is not None:
                out.append(computed)
        return tuple(out)

    def outstanding(self) -> int:
        """Futures not yet collected."""
        return len(self._pending)

    def cancel(self) -> None:
        """Cancel every future not started; running jobs see the stop signal."""
        for future in self._pending:
            future.cancel()

    def close(self, *, wait: bool) -> None:
        """Shut the thread pool down."""
        self._pool.shutdown(wait=wait, cancel_futures=True)


def thread_executor(env: JobEnv, concurrency: int, guard: Guard) -> Executor:
    """The default ``ExecutorFactory``."""
    return ThreadExecutor(env, concurrency, guard)
