"""Rescoring in batches elsewhere: the bookkeeping a process pool and Ray share.

Sessions are sent ``batch`` at a time (a batch costs one task and one message,
so scheduling costs little beside the scoring), a whole tape counting as the
sessions its size suggests (``WholeTape.weight``); at most ``limit`` batches, and
at most ``IN_FLIGHT_BYTES`` of tapes (unless one batch holds more), are in flight,
which bounds the reading process's memory; callbacks are called in
the order sessions were added.  A batch that fails (a scorer's bug, a lost
worker) stops the rescore with ``RescoreFailed``, naming the cause in one line:
a rescore never reports on sessions it did not score.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from ..._errors import ScoringError
from ..rescore._whole import Unit, WholeTape

Handle = TypeVar("Handle")

IN_FLIGHT_BYTES = 256 << 20
"""Tape bytes (sessions still compressed, whole tapes) sent and not yet landed, at most:
a cluster of many CPUs keeps two batches a CPU in flight only while they are small."""


def unit_bytes(item: Unit) -> int:
    """The tape bytes ``item`` carries."""
    return item.size if isinstance(item, WholeTape) else item.packed.stored_bytes


class RescoreFailed(ScoringError):
    """A batch of sessions could not be scored where it was sent."""


class Batches(Generic[Handle]):
    """Queues items, sends full batches with ``send``, lands them in order with ``land``."""

    def __init__(
        self,
        send: Callable[[Sequence[Unit]], Handle],
        land: Callable[[Handle], Sequence[object]],
        *,
        batch: int,
        limit: int,
        max_bytes: int = IN_FLIGHT_BYTES,
    ) -> None:
        self._send_batch = send
        self._land_batch = land
        self._size = max(1, batch)
        self._limit = max(1, limit)
        self._max_bytes = max_bytes
        self._items: list[Unit] = []
        self._callbacks: list[Callable[[Any], None]] = []
        self._weight = 0
        self._bytes = 0  # queued
        self._flight: deque[tuple[Handle, list[Callable[[Any], None]], int]] = deque()
        self._flying = 0  # bytes in flight
        self.sent = 0
        """Batches sent so far."""

    def add(self, item: Unit, done: Callable[[Any], None], weight: int = 1) -> None:
        """Queue ``item`` (counting as ``weight`` sessions); a full batch is sent (landing
        the oldest when too many fly).  ``done`` gets its outcome."""
        self._items.append(item)
        self._callbacks.append(done)
        self._weight += weight
        self._bytes += unit_bytes(item)
        if self._weight >= self._size:
            self.send()

    def send(self) -> None:
        """Send what is queued as one batch."""
        if not self._items:
            return
        while self._flight and (
            len(self._flight) >= self._limit or self._flying + self._bytes > self._max_bytes
        ):
            self._land()
        handle = self._send_batch(self._items)
        self._flight.append((handle, self._callbacks, self._bytes))
        self._flying += self._bytes
        self.sent += 1
        self._items, self._callbacks, self._weight, self._bytes = [], [], 0, 0

    @property
    def flying(self) -> int:
        """Tape bytes sent and not yet landed."""
        return self._flying

    def _land(self) -> None:
        handle, callbacks, size = self._flight.popleft()
        self._flying -= size
        for outcome, done in zip(self._land_batch(handle), callbacks, strict=True):
            done(outcome)

    def drain(self) -> None:
        """Send the last batch and land every one."""
        self.send()
        while self._flight:
            self._land()

    def take(self) -> tuple[list[Unit], list[Callable[[Any], None]]]:
        """The items queued and not yet sent, with their callbacks, taken out of the queue."""
        taken = (self._items, self._callbacks)
        self._items, self._callbacks, self._weight, self._bytes = [], [], 0, 0
        return taken
