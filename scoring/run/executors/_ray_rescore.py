"""Rescoring on Ray: recorded sessions scored in batches, one Ray task per batch.

Imported only for ``rescore --executor ray``.  The driver reads the tapes and
sends ``BATCH`` sessions (with today's cases) per task, so scheduling and
shipping cost little beside the scoring; the scorer and floors go once to the
object store.  At most two batches per CPU of the cluster are in flight,
which bounds the driver's memory; results come back in the order sessions
were read.  Nothing is written on the workers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import ray

from ...checks._score import Scorer
from ...judge._judgement import Floors
from ..rescore._exec import RescoreItem, Rescorer, RescorerFactory, rescore_items
from ..rescore._rescore import Rescored
from ._ray import start_ray

BATCH = 250
"""Sessions per task."""

Pending = tuple[Any, list[Callable[[Rescored], None]]]


class RayRescorer:
    """Sends sessions in batches of ``batch`` to Ray tasks; calls back in order."""

    def __init__(
        self,
        scorer: Scorer,
        floors: Floors,
        *,
        address: str | None,
        num_cpus: int,
        batch: int = BATCH,
    ) -> None:
        self._owns = start_ray(address, num_cpus)
        self._scorer = ray.put(scorer)
        self._floors = floors
        self._batch_size = max(1, batch)
        api: Any = ray  # typed or not, whichever ray is installed
        resources = api.cluster_resources()
        cpus = int(resources.get("CPU", 1))
        self._limit = 2 * max(1, cpus)
        self._task: Any = ray.remote(num_cpus=1)(rescore_items)
        self._items: list[RescoreItem] = []
        self._callbacks: list[Callable[[Rescored], None]] = []
        self._flight: deque[Pending] = deque()
        self.tasks = 0
        """Tasks sent so far."""

    def add(self, item: RescoreItem, done: Callable[[Rescored], None]) -> None:
        """Queue ``item``; a full batch is sent (waiting for the oldest when too many fly)."""
        self._items.append(item)
        self._callbacks.append(done)
        if len(self._items) >= self._batch_size:
            self._send()

    def _send(self) -> None:
        if not self._items:
            return
        while len(self._flight) >= self._limit:
            self._land()
        ref = self._task.remote(self._items, self._scorer, self._floors)
        self._flight.append((ref, self._callbacks))
        self.tasks += 1
        self._items, self._callbacks = [], []

    def _land(self) -> None:
        ref, callbacks = self._flight.popleft()
        for result, done in zip(ray.get(ref), callbacks, strict=True):
            done(result)

    def flush(self) -> None:
        """Send the last batch and wait for every one; shut down a Ray instance it started."""
        try:
            self._send()
            while self._flight:
                self._land()
        finally:
            if self._owns:
                ray.shutdown()
                self._owns = False


def ray_rescorer(*, address: str | None, num_cpus: int, batch: int = BATCH) -> RescorerFactory:
    """A ``RescorerFactory`` for Ray at ``address`` (None: a local instance, ``num_cpus``)."""

    def make(scorer: Scorer, floors: Floors) -> Rescorer:
        return RayRescorer(scorer, floors, address=address, num_cpus=num_cpus, batch=batch)

    return make
