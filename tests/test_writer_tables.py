"""Open tape writers share a budget of large zstd match-finder tables."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaltape.recorder import (
    HarnessEvent,
    SessionStarted,
    TapeError,
    TapeReader,
    _table_budget,
    open_session,
)
from evaltape.recorder._table_budget import LARGE, SMALL, TableBudget, Tables


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[TableBudget]:
    fresh = TableBudget(large_writers=2)
    monkeypatch.setattr(_table_budget, "TABLES", fresh)
    yield fresh


def _header(n: int) -> SessionStarted:
    return SessionStarted(session_id=f"{n + 1:016x}", started_at=0.0)


def _far_repeats() -> list[HarnessEvent]:
    """1.6 MB of random letters in 4 KB events, then 150 events of 100 new letters and
    300 taken from one of those far back: the large tables find most of those repeats,
    the small ones most of them not (as a long session's tool results repeat files)."""
    rng = random.Random(7)

    def letters(n: int) -> str:
        return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))

    early = [letters(4096) for _ in range(400)]
    later = []
    for _ in range(150):
        start = rng.randrange(4096 - 300)
        later.append(letters(100) + rng.choice(early)[start : start + 300])
    return [
        HarnessEvent(at=float(n), name="tool", fields=(("output", text),))
        for n, text in enumerate(early + later)
    ]


def test_budget_hands_out_large_tables_to_the_first_writers_and_takes_them_back() -> None:
    big, little = Tables(hash_log=17, chain_log=20), Tables(hash_log=16, chain_log=18)
    b = TableBudget(large_writers=2, large=big, small=little)
    assert [b.take(), b.take(), b.take()] == [big, big, little]
    assert b.free == 0
    b.give(little)
    assert b.free == 0
    b.give(big)
    assert (b.free, b.take()) == (1, big)
    for large, small in ((little, little), (Tables(15, 20), little), (Tables(17, 17), little)):
        with pytest.raises(ValueError):
            TableBudget(large=large, small=small)
    assert (LARGE.hash_log >= SMALL.hash_log, LARGE.chain_log > SMALL.chain_log) == (True, True)


def test_a_writer_gives_its_share_back_when_its_session_ends(
    budget: TableBudget, tmp_path: Path
) -> None:
    writers = [open_session(tmp_path / f"{n}.tape", _header(n)) for n in range(3)]
    assert budget.free == 0
    writers[0].end()
    writers[0].end()  # a second end gives nothing back twice
    assert budget.free == 1
    with writers[1], writers[2]:
        pass
    assert budget.free == 2


def test_a_writer_that_cannot_open_or_is_dropped_gives_its_share_back(
    budget: TableBudget, tmp_path: Path
) -> None:
    with pytest.raises(TapeError, match="cannot open for writing"):
        open_session(tmp_path / "missing" / "a.tape", _header(0))
    assert budget.free == 2
    writer = open_session(tmp_path / "b.tape", _header(1))
    assert budget.free == 1
    del writer  # never ended: its share comes back when it is collected
    assert budget.free == 2


def test_writers_past_the_budget_write_the_same_events_less_compactly(
    budget: TableBudget, tmp_path: Path
) -> None:
    events = _far_repeats()
    paths = [tmp_path / f"{n}.tape" for n in range(3)]
    writers = [open_session(p, _header(n), clock=lambda: 0.0) for n, p in enumerate(paths)]
    for event in events:
        for w in writers:
            w.append(event)
    for w in writers:
        w.end()
    sizes = [p.stat().st_size for p in paths]
    assert sizes[0] == sizes[1]
    # The third got the small tables: it misses most of the 150 repeats, at 300 bytes each.
    assert sizes[2] > sizes[0] + 150 * 50
    for p in paths:
        (session,) = TapeReader(p).sessions()
        assert list(session.events[1:-1]) == events
