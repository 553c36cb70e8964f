"""Rescoring on every core of this machine: batches of sessions in a pool of processes.

Folding and scoring a session is Python work that holds the GIL, so threads of
one process score one session at a time whatever the machine has.  This
rescorer sends whole tapes (their paths: the pool is on this machine) and the
sessions of tapes too large to send whole, ``BATCH`` sessions at a time and
still compressed, to a pool of processes (one per core, started with
``spawn``: nothing of the reading process's threads or open files is
inherited), which read, decode, fold and score them.  A rescore of fewer
than ``BATCH`` sessions is scored in this process: starting the pool would
cost more than it saves.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..._errors import ScoringError
from ...checks._score import Scorer
from ...judge._judgement import Floors
from ..rescore._exec import Done, RescoreItem, Rescorer, RescorerFactory
from ..rescore._whole import WHOLE_TAPE_BYTES, TapeCases, TapeRead, Unit, WholeTape, score_units
from ._batches import Batches, RescoreFailed

BATCH = 64
"""Sessions per batch sent to a process."""


_STARTED_WITH: list[TapeCases] = []
"""In a pool process: today's cases, as the pool was started with them (sent and
unpickled once a process, not once a batch: a project's cases, rubrics included, can
be large)."""


def _started(cases: bytes) -> None:
    _STARTED_WITH[:] = [pickle.loads(cases)]


def _score_batch(blob: bytes) -> list[object]:
    """In a pool process: unpickle a batch (what cannot be unpickled here, such as a
    scorer this process cannot import, fails the batch, not the process) and score it;
    a batch of whole tapes sent without today's cases takes those the pool started with."""
    units, cases, scorer, floors = pickle.loads(blob)
    if cases is None and _STARTED_WITH and any(isinstance(u, WholeTape) for u in units):
        cases = _STARTED_WITH[0]
    return list(score_units(units, cases, scorer, floors))


class ProcessRescorer:
    """Scores sessions in batches in ``processes`` processes; calls back in order."""

    def __init__(
        self,
        scorer: Scorer,
        floors: Floors,
        *,
        processes: int,
        batch: int = BATCH,
        whole_limit: int = WHOLE_TAPE_BYTES,
    ) -> None:
        self.whole_limit = whole_limit
        """The largest tape sent whole (bytes); 0: every session is read here and sent."""
        self.tapes = 0
        """Tapes sent whole so far."""
        self._scorer = scorer
        self._floors = floors
        self._processes = max(1, processes)
        self._pool: ProcessPoolExecutor | None = None
        self._cases: TapeCases | None = None
        self._pool_cases = False  # the pool's processes were started with ``_cases``
        self._batches: Batches[Future[list[object]]] = Batches(
            self._send, self._land, batch=batch, limit=2 * self._processes
        )

    @property
    def batches(self) -> int:
        """Batches sent to the pool so far."""
        return self._batches.sent

    def _send(self, items: Sequence[Unit]) -> Future[list[object]]:
        if self._pool is None:
            # Started after the first tape came, the processes get today's cases once.
            self._pool_cases = self._cases is not None
            spawn = multiprocessing.get_context("spawn")
            if self._pool_cases:
                self._pool = ProcessPoolExecutor(
                    self._processes, spawn, _started, (pickle.dumps(self._cases),)
                )
            else:
                self._pool = ProcessPoolExecutor(self._processes, spawn)
        whole = not self._pool_cases and any(isinstance(u, WholeTape) for u in items)
        cases = self._cases if whole else None
        blob = pickle.dumps((list(items), cases, self._scorer, self._floors))
        return self._pool.submit(_score_batch, blob)

    def _land(self, future: Future[list[object]]) -> list[object]:
        try:
            return future.result()
        except ScoringError:
            raise
        except BrokenProcessPool as exc:
            raise RescoreFailed(f"rescore: a scoring process died ({exc})") from None
        except Exception as exc:
            raise RescoreFailed(
                f"rescore: a batch of sessions failed: {type(exc).__name__}: {exc}"
            ) from exc

    def add(self, item: RescoreItem, done: Done) -> None:
        """Queue ``item``; a full batch is sent to the pool."""
        self._batches.add(item, done)

    def add_tape(self, tape: WholeTape, cases: TapeCases, done: Callable[[TapeRead], None]) -> None:
        """Queue ``tape`` whole (a process reads it from its path)."""
        self._cases = cases
        self.tapes += 1
        self._batches.add(tape, done, tape.weight)

    def flush(self) -> None:
        """Score what is left (here, when the pool was never needed) and wait for every
        batch."""
        if self._pool is None:  # fewer than one batch: not worth a pool
            items, callbacks = self._batches.take()
            landed = score_units(items, self._cases, self._scorer, self._floors)
            for outcome, done in zip(landed, callbacks, strict=True):
                done(outcome)
        self._batches.drain()

    def close(self) -> None:
        """Shut the pool down, dropping batches not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def process_rescorer(*, processes: int, batch: int = BATCH) -> RescorerFactory:
    """A ``RescorerFactory`` for a pool of ``processes`` processes on this machine."""

    def make(scorer: Scorer, floors: Floors) -> Rescorer:
        return ProcessRescorer(scorer, floors, processes=processes, batch=batch)

    return make
