"""The Ray executor: a run's jobs computed as Ray tasks, on one machine or a cluster.

Imported only for ``--executor ray`` (it imports ``ray``, the ``evaltape[ray]``
extra).  Each job travels with its inputs (case, model, attempt, the recorded
session) and the run's ``JobEnv`` goes once to the object store
(``shipped_env``).  A task is a streaming generator: while the attempt runs it
yields each packed event of its session as it is taken (batched: whatever
accumulated since the last yield), and the driver appends them to the
session's journal beside the tape, so a killed driver or worker loses at most
the events in flight between them; at the end the task yields the attempt's
result and its session's tape bytes, which the driver writes.  Workers need
the installed package and nothing else: no shared folder, no tape file.

The driver keeps at most ``concurrency`` tasks in flight across every model,
asks the guard before each one starts (stop signal, budget) and charges it as
each one ends.  A worker that dies loses only its in-flight attempts: each
becomes an infrastructure error (verdict error, tainted), never a silent rerun;
the journal of its session stays on disk beside the tape.  On a stop, in-flight
tasks are cancelled (``ray.cancel``) and not recorded (their journals are
deleted); finished ones are kept.  With no address a local Ray instance is started for
the run (``concurrency`` CPUs, bound to 127.0.0.1, no dashboard, no usage
statistics) and shut down after it.
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import ray
import ray.exceptions

from evaltape.recorder import SessionStarted, TapeError
from evaltape.recorder._shared import unpack_session
from evaltape.recorder.tape import Journal, Sink, journal_path

from .._env import shipped_env, worker_env
from .._jobs import Job, JobEnv, error_result
from .._stop import StopKind
from ..attempt._attempt import Computed, compute_job
from ._executor import Executor, ExecutorFactory, Guard
from ._ray_connect import start_ray, stop_ray

_WORKER_ENV: dict[str, JobEnv] = {}
"""On a worker process: the ``JobEnv`` of the run it last served (built once per run, so
its network transport is reused across that run's attempts)."""


def _env_on_worker(token: str, env: JobEnv, project: str) -> JobEnv:
    """The run's ``JobEnv`` on this worker; ``project`` "" means the project was shipped
    as Ray's ``working_dir``, which is then this worker's folder."""
    if token not in _WORKER_ENV:
        _WORKER_ENV.clear()
        _WORKER_ENV[token] = worker_env(env, Path(project) if project else Path.cwd())
    return _WORKER_ENV[token]


Streamed = tuple[Any, ...]
"""One item a task streams: ``("start", session id)``, ``("frame", flags, packed event)``
or ``("done", Computed, stop raised or None)``."""


def run_on_worker(job: Job, env: JobEnv, token: str, project: str) -> Iterator[list[Streamed]]:
    """The task body: compute ``job`` on this worker, yielding the session's packed events
    as they are taken (in batches) and, last, what it computed and the stop it raised
    (kind and reason, e.g. refused credentials), if any."""
    try:
        local = _env_on_worker(token, env, project)
        if job.recorded is None and job.packed is not None:  # sent compressed: decode here
            job = attrs.evolve(job, recorded=unpack_session(job.packed))
    except Exception as exc:  # the agent cannot be imported here: this job's error, said plainly
        yield [("done", Computed(result=error_result(job, exc), data=b""), None)]
        return
    items: queue.Queue[Streamed] = queue.Queue()
    light = attrs.evolve(job, recorded=None, packed=None)

    def journal(job: Job, header: SessionStarted) -> Sink:
        items.put(("start", header.session_id))
        return lambda flags, raw: items.put(("frame", flags, raw))

    def work() -> None:
        try:
            computed = compute_job(job, local, journal=journal)
        except Exception as exc:  # a scorer's bug: this job only
            computed = Computed(result=error_result(job, exc), data=b"")
        # the driver puts its own job back: no decoded session travels back
        computed = attrs.evolve(
            computed, result=attrs.evolve(computed.result, job=light, session=None)
        )
        stop = local.stop
        raised = (stop.kind.value, stop.reason) if stop.kind is not None else None
        if raised is not None:  # the next job of this run on this worker starts afresh
            _WORKER_ENV.clear()
        items.put(("done", computed, raised))

    threading.Thread(target=work, name="evaltape-job", daemon=True).start()
    while True:
        batch = [items.get()]
        with contextlib.suppress(queue.Empty):
            while batch[-1][0] != "done":
                batch.append(items.get_nowait())
        yield batch
        if batch[-1][0] == "done":
            return


class RayExecutor:
    """Runs jobs as Ray tasks, at most ``concurrency`` in flight."""

    def __init__(
        self, env: JobEnv, concurrency: int, guard: Guard, *, owns: bool, project: str
    ) -> None:
        self._owns = owns
        self._env = env
        self._guard = guard
        self._limit = max(1, concurrency)
        self._token = uuid.uuid4().hex
        self._project = project
        self._shipped = ray.put(shipped_env(env))
        self._task = ray.remote(num_cpus=1, max_retries=0, num_returns="streaming")(run_on_worker)
        self._queue: deque[Job] = deque()
        self._running: dict[Any, Job] = {}
        self._journals: dict[Any, Journal] = {}

    def submit(self, job: Job) -> None:
        """Queue ``job``; it is sent when fewer than ``concurrency`` tasks are in flight."""
        self._queue.append(job)
        self._top_up()

    def _top_up(self) -> None:
        while self._queue and len(self._running) < self._limit:
            if not self._guard.admits():  # stopped or spent: for good
                self._queue.clear()
                return
            job = self._queue.popleft()
            sent = attrs.evolve(job, recorded=None) if job.packed is not None else job
            ref = self._task.remote(sent, self._shipped, self._token, self._project)
            self._running[ref] = job

    def collect(self, timeout: float) -> tuple[Computed, ...]:
        """Tasks finished since the last call, their streamed events journalled on the way;
        a failed task is an infrastructure error."""
        self._top_up()
        if not self._running:
            return ()
        streams = list(self._running)
        ready, _ = ray.wait(streams, num_returns=1, timeout=timeout)
        if ready:  # and every other stream with an item waiting
            ready, _ = ray.wait(streams, num_returns=len(streams), timeout=0)
        out: list[Computed] = []
        for stream in ready:
            computed = self._take(stream)
            if computed is not None:
                self._guard.charge(computed.result)
                out.append(computed)
        self._top_up()
        return tuple(out)

    def _take(self, stream: Any) -> Computed | None:
        """Handle one streamed batch of ``stream``: journal its events; its result if done."""
        job = self._running[stream]
        try:
            batch: list[Streamed] = ray.get(next(stream))
        except (StopIteration, ray.exceptions.RayError) as exc:
            self._end(stream)  # its journal stays beside the tape
            return Computed(result=error_result(job, WorkerLost(exc)), data=b"")
        for item in batch:
            if item[0] == "start":
                with contextlib.suppress(TapeError):  # no journal: the attempt still runs
                    self._journals[stream] = Journal(journal_path(job.tape, item[1]), item[1])
            elif item[0] == "frame" and stream in self._journals:
                self._journals[stream](item[1], item[2])
            elif item[0] == "done":
                self._end(stream)
                computed, raised = item[1], item[2]
                if raised is not None:
                    self._env.stop.set(StopKind(raised[0]), raised[1])
                assert isinstance(computed, Computed)
                return attrs.evolve(computed, result=attrs.evolve(computed.result, job=job))
        return None

    def _end(self, stream: Any) -> None:
        self._running.pop(stream, None)
        journal = self._journals.pop(stream, None)
        if journal is not None:
            journal.close()

    def outstanding(self) -> int:
        """Jobs queued or in flight."""
        return len(self._queue) + len(self._running)

    def cancel(self) -> None:
        """Drop queued jobs and cancel in-flight tasks; their attempts are not recorded."""
        self._queue.clear()
        for stream in list(self._running):
            with contextlib.suppress(Exception):  # already finished, or its worker gone
                ray.cancel(stream)
            journal = self._journals.get(stream)
            self._end(stream)
            if journal is not None:
                with contextlib.suppress(OSError):
                    journal.path.unlink()

    def close(self, *, wait: bool) -> None:
        """Cancel what is left; shut down the local Ray instance this run started."""
        self.cancel()
        if self._owns:
            stop_ray()


class WorkerLost(Exception):
    """A Ray task that did not return: its worker died or the task failed outside the job."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(f"the Ray worker running it was lost ({ray_cause(exc)})")


_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def ray_cause(exc: BaseException) -> str:
    """``exc`` as one plain line: a task's own exception without Ray's wrapping (its
    ``cause``), terminal escape codes left out."""
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        exc = cause
    text = _ESCAPES.sub("", str(exc)).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def ray_executor(
    *,
    address: str | None,
    project: Path,
    num_cpus: int = 4,
    runtime_env: dict[str, Any] | None = None,
) -> ExecutorFactory:
    """An ``ExecutorFactory`` for Ray at ``address`` (None: a local instance of ``num_cpus``
    for the run), ``runtime_env`` given to Ray (``working_dir``: the project shipped, and
    agents imported from the workers' copy).  Ray is started (or reached) now, before the
    run begins: ``RayUnavailable`` when it cannot be."""
    owns = start_ray(address, num_cpus, runtime_env)
    shipped = "" if runtime_env and "working_dir" in runtime_env else str(project)

    def make(env: JobEnv, concurrency: int, guard: Guard) -> Executor:
        return RayExecutor(env, concurrency, guard, owns=owns, project=shipped)

    return make
