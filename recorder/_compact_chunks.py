"""A streamed response's chunks stored as columns, each chunk relative to the one before.

Server-sent events repeat one envelope around a few new tokens, so chunk ``i``
is stored as ``pre[i]`` bytes from the start of chunk ``i - 1``, then
``mid[i]`` new bytes, then ``suf[i]`` bytes from the end of chunk ``i - 1``
(chunk 0 has no predecessor: ``pre = suf = 0``).  The new bytes of every chunk
are joined into one blob (mostly the tokens themselves), and the four columns
``pre``, ``suf``, ``mid`` and the magnitudes of the time steps are LEB128
varints in one blob, column after column, followed by the number of negative
steps and their chunk indexes (a step is negative only when a clock went
back, so this is usually a single 0).  The encoding is byte-exact.  See
docs/format.md, "Compact exchanges".
"""

from __future__ import annotations

from evaltape.recorder._delta import common_prefix, common_suffix


def varints(values: list[int], out: bytearray) -> None:
    """Append the LEB128 varints of non-negative ``values`` to ``out``."""
    for n in values:
        while n > 0x7F:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)


_STEP_LIMIT = 1 << 63
"""Steps are 64-bit signed ints, as in the plain form."""


def read_varints(data: bytes) -> list[int]:
    """The varints filling all of ``data``, none over 64 bits; ``ValueError`` otherwise."""
    out: list[int] = []
    n = shift = 0
    for byte in data:
        n |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError("a chunk column holds a varint over 64 bits")
            continue
        out.append(n)
        n = shift = 0
    if shift:
        raise ValueError("chunk columns end inside a varint")
    return out


def encode_chunks(body: bytes, sizes: list[int], steps: list[int]) -> tuple[bytes, bytes]:
    """``(new bytes, columns)`` of chunks given as joined ``body``, ``sizes``, ``steps``."""
    pre: list[int] = []
    suf: list[int] = []
    mid: list[int] = []
    parts: list[bytes] = []
    prev = b""
    start = 0
    for size in sizes:
        chunk = body[start : start + size]
        start += size
        p = common_prefix(prev, chunk)
        s = common_suffix(prev, chunk, min(len(prev), len(chunk)) - p)
        pre.append(p)
        suf.append(s)
        mid.append(size - p - s)
        parts.append(chunk[p : size - s])
        prev = chunk
    negative = [i for i, t in enumerate(steps) if t < 0]
    if any(not -_STEP_LIMIT <= t < _STEP_LIMIT for t in steps):
        raise OverflowError("a chunk time step does not fit in 64 bits")
    cols = bytearray()
    for column in (pre, suf, mid, [abs(t) for t in steps], [len(negative)], negative):
        varints(column, cols)
    return b"".join(parts), bytes(cols)


class StoredChunks:
    """The columns of a stored response, checked; ``size`` is known before any chunk is built."""

    def __init__(self, new: bytes, cols: bytes, count: int) -> None:
        values = read_varints(cols)
        if (
            count < 0
            or len(values) <= 4 * count
            or len(values) != 4 * count + 1 + values[4 * count]
        ):
            raise ValueError(
                f"chunk columns hold {len(values)} varints, not those of {count} chunks"
            )
        self._new = new
        self._pre = values[:count]
        self._suf = values[count : 2 * count]
        self._mid = values[2 * count : 3 * count]
        self.steps = values[3 * count : 4 * count]
        last = -1
        for i in values[4 * count + 1 :]:
            if not last < i < count or not self.steps[i] or self.steps[i] > _STEP_LIMIT:
                raise ValueError("chunk columns list a negative step that cannot be")
            self.steps[i] = -self.steps[i]
            last = i
        if any(t >= _STEP_LIMIT for t in self.steps):
            raise ValueError("a chunk time step does not fit in 64 bits")
        if sum(self._mid) != len(new):
            raise ValueError("the chunks' new bytes do not add up to the stored bytes")
        self.sizes: list[int] = []
        prev = 0
        for p, s, m in zip(self._pre, self._suf, self._mid, strict=True):
            if p + s > prev:
                raise ValueError("a chunk refers past the end of the chunk before it")
            prev = p + s + m
            self.sizes.append(prev)
        self.size = sum(self.sizes)
        """Bytes of the joined chunks."""

    def body(self) -> bytes:
        """The chunks' bytes, joined in order."""
        new = self._new
        prev = b""
        at = 0
        chunks: list[bytes] = []
        for p, s, m in zip(self._pre, self._suf, self._mid, strict=True):
            chunk = new[at : at + m]
            if p or s:
                chunk = prev[:p] + chunk + prev[len(prev) - s :]
            at += m
            chunks.append(chunk)
            prev = chunk
        return b"".join(chunks)
