"""Open tape writers share a budget of large zstd match-finder tables."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from evaltape.recorder import (
    HarnessEvent,
    SessionStarted,
    TapeError,
    TapeReader,
    open_session,
)
from evaltape.recorder.tape import _table_budget
from evaltape.recorder.tape._encode import sized_params
from evaltape.recorder.tape._table_budget import TableBudget
from evaltape.recorder.tape._writer import stream_params


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[TableBudget]:
    fresh = TableBudget(large_writers=2)
    monkeypatch.setattr(_table_budget, "TABLES", fresh)
    yield fresh


def _header(n: int) -> SessionStarted:
    return SessionStarted(session_id=f"{n + 1:016x}", started_at=0.0)


def _far_repeats() -> list[HarnessEvent]:
    """300 blocks of 4 KB of random words, then the first 100 again: every repeat
    lies about 1.2 MB back, where 2^17 table entries no longer reach."""
    rng = random.Random(7)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(4000)
    ]
    blocks = [" ".join(rng.choices(words, k=700))[:4096] for _ in range(300)]
    return [
        HarnessEvent(at=float(n), name="tool", fields=(("output", text),))
        for n, text in enumerate(blocks + blocks[:100])
    ]


def test_budget_hands_out_large_tables_to_the_first_writers_and_takes_them_back() -> None:
    b = TableBudget(large_writers=2, large_log=19, small_log=17)
    assert [b.take(), b.take(), b.take()] == [19, 19, 17]
    assert b.free == 0
    b.give(17)
    assert b.free == 0
    b.give(19)
    assert (b.free, b.take()) == (1, 19)
    with pytest.raises(ValueError):
        TableBudget(large_log=17, small_log=17)


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


@pytest.mark.slow
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
    assert sizes[2] > sizes[0] * 1.2  # the third got 2^17 entries and misses the repeats
    for p in paths:
        (session,) = TapeReader(p).sessions()
        assert list(session.events[1:-1]) == events


def test_a_binary_tree_chain_gets_two_entries_a_position_and_whole_sessions_are_capped() -> None:
    lazy, tree = stream_params(9, 19), stream_params(18, 19)
    assert (lazy.hash_log, lazy.chain_log) == (19, 19)
    assert (tree.hash_log, tree.chain_log) == (19, 20)
    for level in (9, 18):
        big = sized_params(level, 50 << 20)  # zstd's own would take 2^22-2^23 entries
        assert (big.window_log, big.hash_log) == (22, 19)
        assert big.chain_log == (20 if level == 18 else 19)
        small = sized_params(level, 10_000)  # what zstd picks for little input stands
        own = zstandard.ZstdCompressionParameters.from_level(level, source_size=10_000)
        assert (small.window_log, small.hash_log, small.chain_log) == (
            own.window_log,
            own.hash_log,
            own.chain_log,
        )


def _held(params: zstandard.ZstdCompressionParameters) -> int:
    """Bytes a compressor with ``params`` holds once its stream has started."""
    compressor = zstandard.ZstdCompressor(compression_params=params)
    stream = compressor.compressobj()
    stream.compress(b"x" * 100)
    stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    return compressor.memory_size()


def test_a_writer_searches_further_than_level_9_in_the_tables_level_9_would_hold() -> None:
    for log in (19, 17):
        own, level_9 = stream_params(None, log), stream_params(9, log)
        assert (own.strategy, own.hash_log, own.chain_log) == (
            level_9.strategy,
            level_9.hash_log,
            level_9.chain_log,
        )
        assert own.search_log > level_9.search_log and own.min_match < level_9.min_match
        assert _held(own) == _held(level_9)
