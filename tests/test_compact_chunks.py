"""A streamed response's chunk columns rebuild exactly the bytes they were made from."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaltape.recorder.tape._chunks import StoredChunks, encode_chunks


def _one_chunk_at_a_time(new: bytes, pre: list[int], suf: list[int], mid: list[int]) -> bytes:
    """The columns' meaning, step by step: chunk i is ``pre[i]`` bytes from the start
    of chunk i - 1, ``mid[i]`` new bytes, then ``suf[i]`` bytes from its end."""
    out = b""
    prev = b""
    at = 0
    for p, s, m in zip(pre, suf, mid, strict=True):
        chunk = prev[:p] + new[at : at + m] + (prev[len(prev) - s :] if s else b"")
        at += m
        out += chunk
        prev = chunk
    return out


@st.composite
def columns(draw: st.DrawFn) -> tuple[bytes, list[int], list[int], list[int]]:
    """Valid columns, with runs of repeated copy lengths as streams have them."""
    count = draw(st.integers(0, 40))
    pre: list[int] = []
    suf: list[int] = []
    mid: list[int] = []
    size = 0  # of the chunk before
    for _ in range(count):
        if pre and draw(st.booleans()) and pre[-1] + suf[-1] <= size:
            p, s = pre[-1], suf[-1]  # the same copies again: a run
        else:
            p = draw(st.integers(0, size))
            s = draw(st.integers(0, size - p))
        m = draw(st.integers(0, 6))
        pre.append(p)
        suf.append(s)
        mid.append(m)
        size = p + s + m
    new = draw(st.binary(min_size=sum(mid), max_size=sum(mid)))
    return new, pre, suf, mid


@pytest.mark.slow
@given(columns())
def test_runs_of_chunks_rebuild_as_one_chunk_at_a_time_does(
    cols: tuple[bytes, list[int], list[int], list[int]],
) -> None:
    new, pre, suf, mid = cols
    stored = StoredChunks(new, pre, suf, mid, [0] * len(mid))
    body = stored.body()
    assert body == _one_chunk_at_a_time(new, pre, suf, mid)
    assert len(body) == stored.size == sum(stored.sizes)


@given(st.lists(st.binary(max_size=12), max_size=30), st.binary(max_size=8), st.binary(max_size=8))
def test_an_event_stream_round_trips_through_its_columns(
    tokens: list[bytes], head: bytes, tail: bytes
) -> None:
    chunks = [b"data: " + head + t + tail + b"\n\n" for t in tokens]
    body = b"".join(chunks)
    new, (pre, suf, mid) = encode_chunks(body, [len(c) for c in chunks])
    stored = StoredChunks(new, pre, suf, mid, [0] * len(chunks))
    assert stored.body() == body
    assert stored.sizes == [len(c) for c in chunks]


@pytest.mark.slow
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 5)), max_size=12),
    st.data(),
)
def test_columns_that_copy_past_the_chunk_before_are_refused(
    rows: list[tuple[int, int, int]], data: st.DataObject
) -> None:
    """Any columns: a chunk that copies more than the chunk before it holds makes the
    body refused; any other columns rebuild as one chunk at a time does."""
    pre, suf, mid = ([r[i] for r in rows] for i in range(3))
    new = data.draw(st.binary(min_size=sum(mid), max_size=sum(mid)))
    size, fits = 0, True
    for p, s, m in rows:
        fits = fits and p + s <= size
        size = p + s + m
    if fits:
        stored = StoredChunks(new, pre, suf, mid, [0] * len(rows))
        assert stored.body() == _one_chunk_at_a_time(new, pre, suf, mid)
    else:  # refused when the columns are read, before any body is asked for
        with pytest.raises(ValueError, match="past the end of the chunk before it"):
            StoredChunks(new, pre, suf, mid, [0] * len(rows)).body()
