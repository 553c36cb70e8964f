"""Reading a stored exchange: decoded and shape-checked in one C pass into plain records.

A stored ``exchange4`` map (``_compact.py``) is two keys, ``k`` then ``x``, as
the writer packs it.  Where a frame starts with exactly those bytes, its ``x``
is decoded by ``msgspec`` straight from the frame into the records below, which
check every slot's type as they go (times are ints or floats, bodies are bytes,
columns and the delta are lists of ints, no column length is negative); any
other stored exchange (the keys in another order, or an older kind brought up
to date by ``_compact.upgrade``) has its ``x`` packed again for the same
decoder.  ``CompactDecoder`` then reads what the records refer to (the header
table, the request-body delta, the chunk columns): one decode path for every
exchange a tape holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

import msgpack
import msgspec

from .._errors import TapeError
from .._events import Assembled, TransportError
from ._chunks import StoredChunks
from ._codec import Plain
from ._compact import KIND, Parts, seconds, upgrade
from ._delta import DeltaDecoder
from ._headers import HeaderTable

PREFIX = msgpack.packb({"k": KIND, "x": None}, use_bin_type=True)[:-1]
"""A map of two, ``"k": "exchange4"`` then ``"x"``: what every frame of a stored
exchange starts with (``CompactEncoder`` builds the map in that order)."""

_COLUMNS = {4: "pre", 5: "suf", 6: "mid", 7: "steps"}
"""The chunk columns among a stored response's slots."""

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


class _StoredError(msgspec.Struct, gc=False):
    type: str
    message: str
    after_chunks: int = 0
    after_bytes: int = 0

    def value(self) -> TransportError:
        return TransportError(
            type=self.type,
            message=self.message,
            after_chunks=self.after_chunks,
            after_bytes=self.after_bytes,
        )


class _StoredExchange(msgspec.Struct, array_like=True, gc=False):
    at: int | float
    duration: int | float
    q: _StoredRequest
    r: _StoredResponse | None
    error: _StoredError | None


_DECODE = msgspec.msgpack.Decoder(_StoredExchange).decode


def stored_exchange(
    data: bytes, loaded: Plain | None, base_length: Callable[[int], int]
) -> _StoredExchange:
    """The record of the stored exchange ``data``: decoded from the frame itself when
    it starts with ``PREFIX`` (``loaded`` None), else from the ``x`` of the map msgpack
    read (``loaded``), an older kind's through ``upgrade``.  ``TapeError`` if malformed."""
    try:
        if loaded is None:
            return _DECODE(memoryview(data)[len(PREFIX) :])
        x = loaded.get("x") if loaded["k"] == KIND else upgrade(loaded, base_length)
        # Packed again for the one decoder (old tapes and hand-made frames only): the
        # same checks, worded the same.
        return _DECODE(msgpack.packb(x, use_bin_type=True))
    except msgspec.ValidationError as exc:
        raise TapeError(f"malformed 'exchange' event: {_worded(exc)}") from exc
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise TapeError(f"malformed 'exchange' event: {exc}") from exc


_SLOTS: dict[tuple[int, ...], str] = {
    (): "'x' is not a list of 5",
    (2,): "'q' is not a list of 5",
    (2, 2): "a compact header is not an index or [name, value]",
    (2, 3): "the request body is not bytes",
    (2, 4): "the body delta is not a list of ints",
    (3,): "'r' is not a list of 9",
    (3, 1): "a compact header is not an index or [name, value]",
    (3, 3): "the chunks' new bytes are not bytes",
    **{(3, n): f"{name!r} is not a list of ints" for n, name in _COLUMNS.items()},
}
"""What is wrong, by where in ``x`` the typed decode found it (a slot, or one inside)."""
_WHERE = re.compile(r" - at `\$((?:\[\d+\])*)")


def _worded(exc: msgspec.ValidationError) -> str:
    """The typed decode's refusal named by the slot it found wrong, as the format page
    names the slots; its own words where the slot needs no name (``at``, ``status``)."""
    found = _WHERE.search(str(exc))
    if found is None:
        return str(exc)
    where = tuple(int(n) for n in re.findall(r"\d+", found.group(1)))
    # (a slot two deep names whatever is wrong inside it; one less deep, its own shape)
    if len(where) >= 2 and where[0] == 3 and where[1] in _COLUMNS and ">= 0" in str(exc):
        return "compact exchange: a chunk column holds a negative length"
    named = _SLOTS.get(where[:2] if len(where) >= 2 else where)
    if named is not None:
        return f"compact exchange: {named}"
    return str(exc)


class CompactDecoder:
    """Reader side: a stored exchange's record -> the parts of its ``Exchange``, with
    the session's header table (mirroring ``CompactEncoder``)."""

    def __init__(self) -> None:
        self.headers = HeaderTable()

    def parts(
        self,
        x: _StoredExchange,
        packed: int,
        delta: DeltaDecoder,
        charge: Callable[[int], None],
    ) -> Parts:
        """The parts of the exchange ``x`` (packed to ``packed`` bytes): what its header
        table, delta and chunk columns say.  ``charge(n)`` is called with its decoded
        size before any body is rebuilt.  ``ValueError`` for anything malformed."""
        q, r = x.q, x.r
        ref, middle = q.base, q.body
        if ref is not None:
            if len(ref) < 3:
                raise ValueError("compact exchange: the body delta is not a list of ints")
            ref[1] = delta.base_length(ref[0]) - ref[1] - ref[2]
        body_size = delta.size(ref, middle)
        headers, text = self.headers.pairs(q.headers, body_size)
        size = packed + body_size - len(middle) + text
        response = None
        if r is not None:
            made = None if r.assembled is None else r.assembled.value()
            chunks = StoredChunks(r.new, r.pre, r.suf, r.mid, r.steps, made)
            r_headers, text = self.headers.pairs(r.headers, chunks.size)
            size += chunks.size - len(r.new) + text
            response = (r.status, r_headers, r.streamed, chunks)
        charge(size)
        request = (q.method, q.url, headers, delta.decode_lazy(ref, middle))
        error = None if x.error is None else x.error.value()
        return seconds(x.at), seconds(x.duration), request, response, error
