"""The process executor: a replay's attempts spread over the cores of this machine.

Replaying is CPU-bound Python (the agent's loop, folding and scoring both
sessions), and threads of one process run one of them at a time.  This
executor starts one process per core (``spawn``: nothing of this process's
threads or open files is inherited), each importing the agent once and
running up to ``concurrency / processes`` attempts at a time in threads.  A job
travels as it would to Ray: the case and, in a replay, the recorded session
still compressed; the process decodes it, runs the attempt, journals its
session to the file beside its tape as it goes (the same machine, the same
files: a killed driver loses no more than with threads), and sends back the
result and the session's tape bytes, which this process writes.

Stops travel both ways: a stop here (Ctrl-C, the time limit) is relayed to
every process, where running attempts see it as they would in threads and jobs
not started are dropped; a stop raised in a process (refused credentials) is
relayed here.  The processes ignore Ctrl-C: this process decides.  A process
that dies loses only its running attempts, each an infrastructure error
(verdict error, tainted), never run again.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.context import SpawnProcess
from pathlib import Path
from typing import Any

import attrs

from evaltape.recorder._shared import unpack_session

from .._env import shipped_env, worker_env
from .._jobs import Job, JobEnv, error_result
from .._stop import StopKind
from ..attempt._attempt import Computed, compute_job, file_journal
from ._executor import Executor, ExecutorFactory, Guard, ThreadExecutor

_STOP_TEXT = 4096
"""Bytes of the shared buffer that carries a stop's kind, reason and cause."""


class ProcessLost(Exception):
    """The process running an attempt died before it returned."""


def _relay_stop(env: JobEnv, event: Any, text: Any) -> None:
    """In a pool process: wait for the driver's stop and set this process's."""
    event.wait()
    kind, reason, cause = bytes(text.value).decode(errors="replace").split("\t", 2)
    env.stop.set(StopKind(kind), reason, cause)


def _watch_parent(parent: int) -> None:
    """In a pool process: exit when the process that started it is gone (killed), so no
    process is left waiting for jobs that will never come; what its attempts journalled
    stays on disk for ``evaltape recover``."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _serve(
    tasks: Any, results: Any, event: Any, text: Any, env_blob: bytes, project: str, slots: int
) -> None:
    """A pool process: run the jobs it takes, ``slots`` at a time, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    try:
        env: JobEnv | None = worker_env(pickle.loads(env_blob), Path(project))
        broken: Exception | None = None
    except Exception as exc:  # the agent cannot be imported: every job's error
        env, broken = None, exc
    if env is not None:
        threading.Thread(target=_relay_stop, args=(env, event, text), daemon=True).start()
    free = threading.Semaphore(slots)
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="evaltape-job")

    def run(key: int, job: Job) -> None:
        light = attrs.evolve(job, recorded=None, packed=None)
        raised = None
        try:
            if env is None:
                raise broken or RuntimeError("no job environment")
            if env.stop.is_set():  # stopped before it started: dropped, as in threads
                results.put(("skip", key, None, None))
                return
            if job.recorded is None and job.packed is not None:
                job = attrs.evolve(job, recorded=unpack_session(job.packed))
            computed = compute_job(job, env, journal=file_journal)
            if env.stop.kind is not None and not event.is_set():
                raised = (env.stop.kind.value, env.stop.reason)
        except Exception as exc:  # a scorer's bug, an agent that cannot load: this job only
            computed = Computed(result=error_result(light, exc), data=b"")
        computed = attrs.evolve(
            computed, result=attrs.evolve(computed.result, job=light, session=None)
        )
        results.put(("done", key, computed, raised))

    def finish(key: int, job: Job) -> None:
        try:
            run(key, job)
        finally:
            free.release()

    while True:
        free.acquire()
        item = tasks.get()
        if item is None:
            break
        key, job = item
        results.put(("start", key, multiprocessing.current_process().pid, None))
        pool.submit(finish, key, job)
    pool.shutdown(wait=True)


class ProcessExecutor:
    """Runs jobs in ``processes`` processes of this machine, ``concurrency`` in flight;
    ``blob`` is the run's ``shipped_env``, pickled."""

    def __init__(
        self,
        env: JobEnv,
        concurrency: int,
        guard: Guard,
        *,
        processes: int,
        project: Path,
        blob: bytes,
    ) -> None:
        self._env = env
        self._guard = guard
        self._limit = max(1, concurrency)
        count = max(1, min(processes, self._limit))
        slots = -(-self._limit // count)
        ctx = multiprocessing.get_context("spawn")
        self._tasks: Any = ctx.Queue()
        self._results: Any = ctx.Queue()
        self._event = ctx.Event()
        self._text: Any = ctx.Array("c", _STOP_TEXT)
        args = (self._tasks, self._results, self._event, self._text, blob, str(project), slots)
        self._procs: list[SpawnProcess] = [
            ctx.Process(target=_serve, args=args, daemon=True, name=f"evaltape-{n}")
            for n in range(count)
        ]
        for proc in self._procs:
            proc.start()
        self._queue: deque[Job] = deque()
        self._sent: dict[int, Job] = {}
        self._on: dict[int, int] = {}  # key -> pid of the process running it
        self._next = 0

    def submit(self, job: Job) -> None:
        """Queue ``job``; it is sent when fewer than ``concurrency`` are in flight."""
        self._queue.append(job)
        self._top_up()

    def _top_up(self) -> None:
        while self._queue and len(self._sent) < self._limit:
            if not self._guard.admits():  # stopped or spent: for good
                self._queue.clear()
                return
            job = self._queue.popleft()
            key, self._next = self._next, self._next + 1
            self._sent[key] = job
            sent = attrs.evolve(job, recorded=None) if job.packed is not None else job
            self._tasks.put((key, sent))

    def collect(self, timeout: float) -> tuple[Computed, ...]:
        """Jobs finished since the last call; a job whose process died is an
        infrastructure error."""
        self._top_up()
        if not self._sent:
            return ()
        out: list[Computed] = []
        items: list[tuple[str, int, Any, Any]] = []
        with contextlib.suppress(queue.Empty):
            items.append(self._results.get(timeout=timeout))
            while True:
                items.append(self._results.get_nowait())
        for kind, key, value, raised in items:
            if kind == "start":
                self._on[key] = value
                continue
            job = self._sent.pop(key, None)
            self._on.pop(key, None)
            if job is None or kind == "skip":
                continue
            if raised is not None:
                self._env.stop.set(StopKind(raised[0]), raised[1])
            computed = attrs.evolve(value, result=attrs.evolve(value.result, job=job))
            self._guard.charge(computed.result)
            out.append(computed)
        out.extend(self._lost())
        self._top_up()
        return tuple(out)

    def _lost(self) -> list[Computed]:
        """Jobs whose process died (every job sent, when none is left alive)."""
        dead = {p.pid: p.exitcode for p in self._procs if not p.is_alive()}
        if not dead:
            return []
        none_left = len(dead) == len(self._procs)
        out = []
        for key in list(self._sent):
            pid = self._on.get(key)
            if pid in dead or none_left:
                job = self._sent.pop(key)
                self._on.pop(key, None)
                code = dead.get(pid) if pid is not None else None
                why = ProcessLost(f"the process running it died (exit code {code})")
                out.append(Computed(result=error_result(job, why), data=b""))
        return out

    def outstanding(self) -> int:
        """Jobs queued or in flight."""
        return len(self._queue) + len(self._sent)

    def cancel(self) -> None:
        """Drop queued jobs and relay the stop: running attempts see it, jobs sent but not
        started are dropped."""
        self._queue.clear()
        stop = self._env.stop
        if stop.kind is not None and not self._event.is_set():
            line = f"{stop.kind.value}\t{stop.reason}\t{stop.cause}".encode()
            self._text.value = line[: _STOP_TEXT - 1]
            self._event.set()

    def close(self, *, wait: bool) -> None:
        """Stop the processes: after their running attempts (``wait``), or now."""
        for _ in self._procs:
            self._tasks.put(None)
        for proc in self._procs:
            if wait:
                proc.join()
            else:
                proc.kill()
                proc.join()


def process_executor(*, processes: int, project: Path) -> ExecutorFactory:
    """An ``ExecutorFactory`` for a pool of ``processes`` processes on this machine (``blob``
    is the run's environment as it travels).  A run whose environment cannot travel (a
    library caller's clock or scorer that pickle cannot carry, such as a lambda) runs in
    threads instead."""

    def make(env: JobEnv, concurrency: int, guard: Guard) -> Executor:
        try:
            blob = pickle.dumps(shipped_env(env))
        except (pickle.PicklingError, AttributeError, TypeError):
            return ThreadExecutor(env, concurrency, guard)
        return ProcessExecutor(
            env, concurrency, guard, processes=processes, project=project, blob=blob
        )

    return make
