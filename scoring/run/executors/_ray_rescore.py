"""Rescoring on Ray: recorded sessions scored in batches, one Ray task per batch.

Imported only for ``rescore --executor ray``.  The driver sends each tape of
up to ``WHOLE_TAPE_BYTES`` whole, as the bytes of its file, so it reads none
of its frames; a larger tape it reads, and sends its sessions still
compressed as the tape stores them.  A task carries ``BATCH`` sessions'
worth (a tape counting as its size suggests); today's cases (rubrics
included), the scorer and the floors go once to the object store.  Workers
read, decode, fold and score.  At most two batches per CPU of the cluster,
and at most ``IN_FLIGHT_BYTES`` of tapes, are in flight, which bounds the
driver's memory; results come back in the order sessions were read.  Nothing
is written on the workers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import ray
import ray.exceptions

from ...checks._score import Scorer
from ...judge._judgement import Floors
from ..rescore._exec import Done, RescoreItem, Rescorer, RescorerFactory
from ..rescore._whole import WHOLE_TAPE_BYTES, TapeCases, TapeRead, Unit, WholeTape, score_units
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
        whole_limit: int = WHOLE_TAPE_BYTES,
    ) -> None:
        self.whole_limit = whole_limit
        """The largest tape sent whole (bytes); 0: every session is read here and sent."""
        self.tapes = 0
        """Tapes sent whole so far."""
        self._owns = start_ray(address, num_cpus, runtime_env)
        self._scorer = ray.put(scorer)
        self._floors = floors
        api: Any = ray  # typed or not, whichever ray is installed
        cpus = int(api.cluster_resources().get("CPU", 1))
        self._cases: Any = None  # today's cases in the object store, once a tape is sent
        self._task: Any = ray.remote(num_cpus=1, max_retries=0)(score_units)
        self._batches: Batches[Any] = Batches(
            self._send, self._land, batch=batch, limit=2 * max(1, cpus)
        )

    @property
    def tasks(self) -> int:
        """Tasks sent so far."""
        return self._batches.sent

    def _send(self, items: Sequence[Unit]) -> Any:
        units = [_with_bytes(u) if isinstance(u, WholeTape) else u for u in items]
        return self._task.remote(units, self._cases, self._scorer, self._floors)

    def _land(self, ref: Any) -> list[object]:
        try:
            landed: list[object] = ray.get(ref)
        except ray.exceptions.RayError as exc:
            why = ray_cause(exc)
            raise RescoreFailed(f"rescore on Ray: a batch of sessions failed: {why}") from None
        return landed

    def add(self, item: RescoreItem, done: Done) -> None:
        """Queue ``item``; a full batch is sent."""
        self._batches.add(item, done)

    def add_tape(self, tape: WholeTape, cases: TapeCases, done: Callable[[TapeRead], None]) -> None:
        """Queue ``tape`` whole: its bytes go with the task that reads it."""
        if self._cases is None:
            self._cases = ray.put(cases)
        self.tapes += 1
        self._batches.add(tape, done, tape.weight)

    def flush(self) -> None:
        """Send the last batch and wait for every one."""
        self._batches.drain()

    def close(self) -> None:
        """Shut down the Ray instance it started, if it did."""
        if self._owns:
            stop_ray()
            self._owns = False


def _with_bytes(tape: WholeTape) -> WholeTape:
    """``tape`` with its file's bytes (a worker may not see this machine's files); as it
    is if it cannot be read now, so the worker says why it cannot read it."""
    try:
        return attrs.evolve(tape, data=tape.path.read_bytes())
    except OSError:
        return tape


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
