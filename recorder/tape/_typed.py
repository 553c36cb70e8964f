"""The usual compact exchange, decoded and shape-checked in one C pass.

A stored ``exchange4`` map (``_compact.py``) is two keys, ``k`` then ``x``, as
the writer packs it.  Where a frame starts with exactly those bytes, its ``x``
is decoded by ``msgspec`` straight into typed records, which check every
slot's type as they go (times are ints or floats, bodies are bytes, columns
and the delta are lists of ints, no column length is negative): the checks
``CompactDecoder._parts`` and ``StoredChunks`` make in Python one value at a
time.  What the records refuse (any other type, an error map, another shape)
is read by msgpack and ``_parts`` as before, which also word the problem, so
a tape reads to the same events and the same errors either way; the records
only take what ``_parts`` would accept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import msgpack
import msgspec

from .._events import Assembled
from ._compact import KIND, CompactDecoder, Parts, _seconds
from ._delta import DeltaDecoder

PREFIX = msgpack.packb({"k": KIND, "x": None}, use_bin_type=True)[:-1]
"""A map of two, ``"k": "exchange4"`` then ``"x"``: what every frame of a stored
exchange starts with (``CompactEncoder`` builds the map in that order)."""

_Header = int | bool | list[int | str]
"""A stored header as ``HeaderTable.pairs`` reads it (which checks the rest)."""
_Length = Annotated[int, msgspec.Meta(ge=0)]
"""A length in a chunk column."""


class _StoredRequest(msgspec.Struct, array_like=True, gc=False):
    method: str
    url: str
    headers: list[_Header]
    body: bytes
    base: list[int] | None


class _StoredAssembled(msgspec.Struct, array_like=True, gc=False):
    version: int
    model: str
    response_id: str
    output_text: str
    thinking: str
    finish_reason: str
    tool_calls: tuple[tuple[str, str, str], ...]
    usage: tuple[int, int, int, int, int, int | float | None] | None
    error: str

    def value(self) -> Assembled:
        return Assembled(
            version=self.version,
            model=self.model,
            response_id=self.response_id,
            output_text=self.output_text,
            thinking=self.thinking,
            finish_reason=self.finish_reason,
            tool_calls=self.tool_calls,
            usage=self.usage,
            error=self.error,
        )


class _StoredResponse(msgspec.Struct, array_like=True, gc=False):
    status: int
    headers: list[_Header]
    streamed: bool
    new: bytes
    pre: list[_Length]
    suf: list[_Length]
    mid: list[_Length]
    steps: list[int]
    assembled: _StoredAssembled | None


class _StoredExchange(msgspec.Struct, array_like=True, gc=False):
    at: int | float
    duration: int | float
    q: _StoredRequest
    r: _StoredResponse | None
    error: None


_DECODE = msgspec.msgpack.Decoder(_StoredExchange).decode


def typed_parts(
    data: bytes,
    compact: CompactDecoder,
    delta: DeltaDecoder,
    charge: Callable[[int], None],
) -> Parts | None:
    """``compact._parts`` of the frame ``data`` (packed to ``len(data)`` bytes) for the
    usual exchange; None, with nothing read or changed, for any other frame."""
    if not data.startswith(PREFIX):
        return None
    try:
        x = _DECODE(memoryview(data)[len(PREFIX) :])
    except msgspec.DecodeError:  # (ValidationError is one)
        return None
    q, r = x.q, x.r
    base = q.base
    if base is not None and len(base) < 3:
        return None
    query = (q.method, q.url, q.headers, q.body, base)
    answer = None
    if r is not None:
        made = None if r.assembled is None else r.assembled.value()
        answer = (r.status, r.headers, r.streamed, r.new, r.pre, r.suf, r.mid, r.steps, made)
    at, duration = _seconds(x.at), _seconds(x.duration)
    return compact.checked(at, duration, query, answer, None, len(data), delta, charge, typed=True)
