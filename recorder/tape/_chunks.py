"""A streamed response's chunks stored as columns, each chunk relative to the one before.

Server-sent events repeat one envelope around a few new tokens, so chunk ``i``
is stored as ``pre[i]`` bytes from the start of chunk ``i - 1``, then
``mid[i]`` new bytes, then ``suf[i]`` bytes from the end of chunk ``i - 1``
(chunk 0 has no predecessor: ``pre = suf = 0``).  The new bytes of every chunk
are joined into one blob (mostly the tokens themselves); ``pre``, ``suf``,
``mid`` and the time steps are four int columns (msgpack arrays, decoded in C).
The encoding is byte-exact.  See docs/format.md, "Compact exchanges".
"""

from __future__ import annotations

from itertools import accumulate, islice
from operator import add, le
from typing import Any

from .._events import Assembled, Chunk, with_message

Columns = tuple[list[int], list[int], list[int]]

SNAP = 4
"""A chunk takes the chunk before's ``pre`` when its own common prefix is less than
this many bytes longer: those bytes are the start of the token before, which
this token happens to share.  The new bytes then hold whole tokens (text that
later requests repeat) and the ``pre`` column repeats (costs next to nothing)."""


def _prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two short byte strings (one C-level int xor)."""
    n = min(len(a), len(b))
    x = int.from_bytes(a[:n], "big") ^ int.from_bytes(b[:n], "big")
    return n - 1 - (x.bit_length() - 1) // 8 if x else n


def _suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the common suffix of two short byte strings, at most ``limit``."""
    n = min(len(a), len(b), limit)
    if n <= 0:
        return 0
    x = int.from_bytes(a[len(a) - n :], "little") ^ int.from_bytes(b[len(b) - n :], "little")
    return n - 1 - (x.bit_length() - 1) // 8 if x else n


def encode_chunks(body: bytes, sizes: list[int]) -> tuple[bytes, Columns]:
    """``(new bytes, (pre, suf, mid))`` of the chunks of ``body`` cut at ``sizes``."""
    pre: list[int] = []
    suf: list[int] = []
    mid: list[int] = []
    parts: list[bytes] = []
    prev = b""
    start = last = 0
    for size in sizes:
        chunk = body[start : start + size]
        start += size
        p = _prefix(prev, chunk)
        if last < p < last + SNAP:
            p = last
        last = p
        s = _suffix(prev, chunk, min(len(prev), len(chunk)) - p)
        pre.append(p)
        suf.append(s)
        mid.append(size - p - s)
        parts.append(chunk[p : size - s])
        prev = chunk
    return b"".join(parts), (pre, suf, mid)


class StoredChunks:
    """The columns of a stored response, checked (no chunk copies more than the chunk
    before it holds); ``size`` is known before any chunk is built, and ``body`` builds
    the joined chunks when first asked for (a fold that reads a stream's assembled
    message never asks)."""

    def __init__(
        self,
        new: bytes,
        pre: list[int],
        suf: list[int],
        mid: list[int],
        steps: list[int],
        assembled: Assembled | None = None,
    ) -> None:
        """The columns as the typed decode gives them (``_typed.py``): lists of ints, the
        first three holding no negative length; ``assembled``, the message the recorder
        assembled from these chunks, if the tape keeps one."""
        self._new = new
        self._pre, self._suf, self._mid, self.steps = pre, suf, mid, steps
        if not len(self._pre) == len(self._suf) == len(self._mid) == len(self.steps):
            raise ValueError("compact exchange: the chunk columns differ in length")
        if sum(self._mid) != len(new):
            raise ValueError("the chunks' new bytes do not add up to the stored bytes")
        copies = list(map(add, pre, suf))
        self.size = sum(copies) + len(new)
        """Bytes of the joined chunks."""
        self.sizes = list(map(add, copies, mid))
        """Each chunk's length."""
        # Chunk i copies pre[i] + suf[i] bytes of chunk i - 1 (chunk 0: of nothing).
        if copies and (copies[0] or not all(map(le, islice(copies, 1, None), self.sizes))):
            raise ValueError("a chunk refers past the end of the chunk before it")
        self._body: bytes | None = None
        self._chunks: tuple[Chunk, ...] | None = None
        self.assembled = assembled

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickled as what it holds, not as columns and a half-built cache)
        if self.assembled is None:
            return (tuple, (self.chunks(),))
        return (with_message, (self.chunks(), self.assembled))

    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks themselves (``steps``: each one's time in whole milliseconds since
        the one before), built when a reader first asks for them, then kept."""
        built = self._chunks
        if built is None:
            built = self._chunks = self._built()
        return built

    def _built(self) -> tuple[Chunk, ...]:
        body = self.body()
        ends = accumulate(self.sizes)
        return tuple(
            Chunk(at=now / 1000, data=body[end - size : end])
            for size, end, now in zip(self.sizes, ends, accumulate(self.steps), strict=True)
        )

    def body(self) -> bytes:
        """The chunks' bytes, joined in order (built once)."""
        if self._body is None:
            self._body = self._joined()
        return self._body

    def _joined(self) -> bytes:
        new = self._new
        parts: list[bytes] = []
        # The chunk before is head + middle + tail, kept apart: a chunk usually copies
        # as much from its start and end as the chunk before did (the event's
        # envelope), which are then those very pieces; copying no more than those,
        # it copies no more than the chunk before holds.
        head = middle = tail = b""
        at = h = t = 0  # h, t: the lengths of head and tail
        add = parts.extend
        # (``__init__`` checked that the columns are as long as each other)
        for p, s, end in zip(self._pre, self._suf, accumulate(self._mid), strict=False):
            if p != h or s != t:  # (the usual chunk copies what the one before did)
                if p > h or s > t:  # (``__init__`` checked that the chunk before holds it)
                    whole = head + middle + tail
                    head, tail = whole[:p], whole[len(whole) - s :]
                else:
                    head, tail = head[:p], tail[t - s :]
                h, t = p, s
            middle = new[at:end]
            at = end
            add((head, middle, tail))
        return b"".join(parts)
