"""Batches of rescore work sent elsewhere: in order, and bounded in count and in bytes.

The bookkeeping a process pool and Ray share, driven here by a recording stand-in
for the place batches go: every unit lands once, callbacks come in the order units
were added, and what is in flight never passes the batch limit or the byte limit
(a batch larger than the byte limit flies alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from evaltape.scoring.run.executors._batches import Batches
from evaltape.scoring.run.rescore._whole import SESSION_GUESS, Unit, WholeTape


class Elsewhere:
    """Where batches go: keeps what was sent, and what was in flight at each send."""

    def __init__(self) -> None:
        self.sent: list[list[str]] = []
        self.flying: list[int] = []  # batches in flight when each was sent (itself included)
        self.bytes: list[int] = []  # bytes in flight when each was sent (itself included)
        self.landed = 0
        self.batches: Batches[int] | None = None

    def send(self, units: Sequence[Unit]) -> int:
        assert self.batches is not None
        self.sent.append([u.label for u in units if isinstance(u, WholeTape)])
        self.flying.append(len(self.sent) - self.landed)
        self.bytes.append(
            self.batches.flying + sum(u.size for u in units if isinstance(u, WholeTape))
        )
        return len(self.sent) - 1

    def land(self, handle: int) -> list[str]:
        self.landed += 1
        return [f"scored {label}" for label in self.sent[handle]]


def _tape(n: int, size: int) -> WholeTape:
    return WholeTape(path=Path(f"t{n}.tape"), label=f"t{n}", wanted=None, size=size)


def _run(
    sizes: list[int], *, batch: int, limit: int, max_bytes: int
) -> tuple[Elsewhere, list[str]]:
    where = Elsewhere()
    batches: Batches[int] = Batches(
        where.send, where.land, batch=batch, limit=limit, max_bytes=max_bytes
    )
    where.batches = batches
    got: list[str] = []
    for n, size in enumerate(sizes):
        tape = _tape(n, size)
        batches.add(tape, got.append, tape.weight)
    batches.drain()
    assert batches.flying == 0
    return where, got


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_every_tape_lands_once_in_order_with_at_most_limit_batches_in_flight(limit: int) -> None:
    sizes = [(n % 7 + 1) * SESSION_GUESS for n in range(40)]
    where, got = _run(sizes, batch=5, limit=limit, max_bytes=1 << 40)
    assert got == [f"scored t{n}" for n in range(40)]
    assert max(where.flying) == limit  # the limit is reached, never passed
    # A batch is sent once it holds ``batch`` sessions' worth (a tape: one per 16 KiB).
    for labels in where.sent[:-1]:
        weights = [sizes[int(label[1:])] // SESSION_GUESS for label in labels]
        assert sum(weights) >= 5 and sum(weights[:-1]) < 5


def test_bytes_in_flight_stay_under_the_limit_and_a_larger_batch_flies_alone() -> None:
    mib = 1 << 20
    sizes = [3 * mib] * 10 + [9 * mib] + [2 * mib] * 5
    where, got = _run(sizes, batch=1, limit=100, max_bytes=8 * mib)
    assert got == [f"scored t{n}" for n in range(16)]
    assert len(where.sent) == 16  # one tape a batch (each is over 1 session's worth)
    for flying, sent in zip(where.bytes, where.sent, strict=True):
        if sent == ["t10"]:  # 9 MiB: over the limit on its own, so nothing else flies
            assert flying == 9 * mib
        else:
            assert flying <= 8 * mib
    assert max(where.flying[:10]) == 2  # 3 MiB tapes: two fit in 8 MiB, a third waits
    assert max(where.flying[11:]) == 4  # 2 MiB tapes: four fit
