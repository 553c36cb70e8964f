"""Rescoring on Ray: recorded sessions scored in batches, one Ray task per batch.

Imported only for ``rescore --executor ray``.  The driver reads the tapes and
sends ``BATCH`` sessions per task, still compressed as the tape stores them
(with today's cases, rubrics included), so the driver never decodes a session
and a task carries about the bytes the tape holds; the scorer and floors go
once to the object store.  Workers decode, fold and score.  At most two
batches per CPU of the cluster are in flight, which bounds the driver's
memory; results come back in the order sessions were read.  Nothing is
written on the workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ray
import ray.exceptions

from ...checks._score import Scorer
from ...judge._judgement import Floors
from ..rescore._exec import Done, Landed, RescoreItem, Rescorer, RescorerFactory, rescore_items
from ._batches import Batches, RescoreFailed
from ._ray import ray_cause
from ._ray_connect import start_ray, stop_ray

BATCH = 250
"""Sessions per task."""


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
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        self._owns = start_ray(address, num_cpus, runtime_env)
        self._scorer = ray.put(scorer)
        self._floors = floors
        api: Any = ray  # typed or not, whichever ray is installed
        cpus = int(api.cluster_resources().get("CPU", 1))
        self._task: Any = ray.remote(num_cpus=1, max_retries=0)(rescore_items)
        self._batches: Batches[Any] = Batches(
            self._send, self._land, batch=batch, limit=2 * max(1, cpus)
        )

    @property
    def tasks(self) -> int:
        """Tasks sent so far."""
        return self._batches.sent

    def _send(self, items: Sequence[RescoreItem]) -> Any:
        return self._task.remote(list(items), self._scorer, self._floors)

    def _land(self, ref: Any) -> list[Landed]:
        try:
            landed: list[Landed] = ray.get(ref)
        except ray.exceptions.RayError as exc:
            why = ray_cause(exc)
            raise RescoreFailed(f"rescore on Ray: a batch of sessions failed: {why}") from None
        return landed

    def add(self, item: RescoreItem, done: Done) -> None:
        """Queue ``item``; a full batch is sent."""
        self._batches.add(item, done)

    def flush(self) -> None:
        """Send the last batch and wait for every one."""
        self._batches.drain()

    def close(self) -> None:
        """Shut down the Ray instance it started, if it did."""
        if self._owns:
            stop_ray()
            self._owns = False


def ray_rescorer(
    *,
    address: str | None,
    num_cpus: int,
    batch: int = BATCH,
    runtime_env: dict[str, Any] | None = None,
) -> RescorerFactory:
    """A ``RescorerFactory`` for Ray at ``address`` (None: a local instance, ``num_cpus``)."""

    def make(scorer: Scorer, floors: Floors) -> Rescorer:
        return RayRescorer(
            scorer,
            floors,
            address=address,
            num_cpus=num_cpus,
            batch=batch,
            runtime_env=runtime_env,
        )

    return make
