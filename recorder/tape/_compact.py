"""The compact stored form of an exchange (event kind ``exchange4``).

The plain ``exchange`` map (``_codec.py``) is what a writer hands over; this
module turns it into a smaller stored map, and a reader's stored map into its
``Exchange``:

    {"k": "exchange4", "x": [at, duration, q, r, error]}
    q = [method, url, headers, body, base]
    r = nil | [status, headers, streamed, new bytes, pre, suf, mid, steps_ms, assembled]
    error = nil | the plain error map

``headers`` refer to the session's header table (``_headers.py``), ``body``/``base``
are a request-body delta whose reference may go on with copies from inside its
base (``_delta.py``), the response's chunks are stored as columns, each chunk
relative to the one before (``_chunks.py``), their times as whole milliseconds
since the chunk before, and ``assembled`` is the streamed message as the recorder
assembled it (``Response.assembled``).  ``at`` and ``duration`` are whole
microseconds as ints (floats, seconds, for a time that is not).  The stored maps
of formats 1.0 to 2.0 (``exchange``, ``exchange2``, ``exchange3``) are read
through ``upgrade``, the one function that knows them, into the ``x`` a reader
decodes (``_typed.py``).  See docs/format.md, "Compact exchanges".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from .._events import Exchange, Request, Response, TransportError
from ._chunks import StoredChunks, encode_chunks
from ._codec import Plain
from ._delta import DeltaBody, DeltaEncoder
from ._headers import Headers, HeaderTable

KIND = "exchange4"
"""The stored kind tag of a compact exchange as this writer stores it."""
KINDS = frozenset({KIND, "exchange3", "exchange2", "exchange"})
"""The kinds a reader reads as exchanges (``exchange3``: formats 1.2 to 2.0,
``exchange2``: format 1.1, ``exchange``: format 1.0), the older three through
``upgrade``."""

_EXACT = 2**53
"""Counts below this are exact as floats."""


def stored_time(seconds: Any) -> Any:
    """A time as ``exchange4`` stores it: whole microseconds as an int when ``seconds``
    is a float that many microseconds give back exactly (as every time the recorder
    rounds), else ``seconds`` as it is."""
    if type(seconds) is float and -_EXACT < seconds * 1_000_000 < _EXACT:
        micros = round(seconds * 1_000_000)
        # (-0.0 equals 0 but is not what 0 gives back)
        if micros / 1_000_000 == seconds and (micros or math.copysign(1.0, seconds) > 0):
            return micros
    return seconds


def seconds(stored: int | float) -> float:
    """The time an ``exchange4`` slot holds: an int counts microseconds."""
    return stored / 1_000_000 if type(stored) is int else stored


def _milliseconds(steps_us: Any) -> Any:
    """Steps of whole microseconds as steps of whole milliseconds (each time rounded to
    the millisecond a reader keeps); anything but a list of ints as it is, for the checks."""
    if type(steps_us) is not list or not all(type(n) is int for n in steps_us):
        return steps_us
    out, last = [], 0
    for now in accumulate(steps_us):
        ms = round(now / 1000)
        out.append(ms - last)
        last = ms
    return out


def upgrade(stored: Plain, base_length: Callable[[int], int]) -> Any:
    """The ``x`` of an ``exchange4`` standing for a stored ``exchange3``, ``exchange2``
    or ``exchange`` map (times in seconds for ``exchange2`` and ``exchange``, chunk
    steps in microseconds and no assembled message before ``exchange4``, the plain
    parts for ``exchange``); ``base_length(back)`` is the length of the request body
    ``back`` bodies ago, which a format 1.0 delta counts its prefix from.  Malformed
    slots are passed on as they are, for the typed decode to refuse; a format 1.0
    map's are checked here, worded as its reader worded them."""
    if stored["k"] == "exchange":
        return _plain_x(stored, base_length)
    x = stored.get("x")
    if type(x) is not list or len(x) != 5:
        return x
    at, duration, q, r, error = x
    if stored["k"] == "exchange2":  # seconds, an int too
        at, duration = (_time(t) for t in (at, duration))
    if r is not None:
        if type(r) is not list or len(r) != 8:
            raise ValueError("compact exchange: 'r' is not a list of 8")
        r = [*r[:7], _milliseconds(r[7]), None]
    return [at, duration, q, r, error]


def _time(seconds: Any) -> Any:
    """A time in seconds (an int too) as ``exchange4`` stores it."""
    return stored_time(float(seconds) if type(seconds) is int else seconds)


def _plain_x(stored: Plain, base_length: Callable[[int], int]) -> list[Any]:
    """``upgrade`` of a format 1.0 exchange: the plain map, with a request-body delta
    ``[back, prefix, suffix]``, headers as pairs, the response's chunks joined."""
    q = _part(stored, "request")
    if q is None:
        raise ValueError("missing field 'request'")
    ref = q.get("base")
    if ref is not None:
        if not (type(ref) is list and len(ref) == 3 and all(type(n) is int for n in ref)):
            raise ValueError("request body delta is not [back, prefix, suffix]")
        back, prefix, suffix = ref
        ref = [back, base_length(back) - prefix - suffix, suffix]  # the prefix as a skip
    x_q = [q.get("method"), q.get("url"), _plain_headers(q), q.get("body"), ref]
    r = _part(stored, "response")
    x_r = None
    if r is not None:
        sizes, steps = r.get("sizes", []), r.get("steps_us", [])
        if type(sizes) is not list or type(steps) is not list or len(sizes) != len(steps):
            raise ValueError("fields 'sizes' and 'steps_us' differ in length")
        no_copies = [0] * len(sizes)
        x_r = [
            *(r.get("status"), _plain_headers(r), r.get("streamed", False), r.get("body", b"")),
            *(no_copies, no_copies, sizes, _milliseconds(steps), r.get("assembled")),
        ]
    times = (_time(stored.get(key)) for key in ("at", "duration"))
    return [*times, x_q, x_r, stored.get("error")]


def _part(stored: Plain, key: str) -> Plain | None:
    part = stored.get(key)
    if part is not None and type(part) is not dict:
        raise TypeError(f"field {key!r} holds {type(part).__name__}")
    return part


def _plain_headers(d: Plain) -> list[list[str]]:
    """A format 1.0 header list, checked: pairs of str (which the header table reads as
    pairs of their own)."""
    rows = d.get("headers", [])
    if type(rows) is not list:
        raise TypeError(f"field 'headers' holds {type(rows).__name__}")
    for row in rows:
        if type(row) is not list or len(row) != 2:
            raise TypeError("field 'headers' holds an item that is not [name, value]")
        if type(row[0]) is not str or type(row[1]) is not str:
            raise TypeError("field 'headers' holds an item that is not [str, str]")
    return rows


Parts = tuple[
    float,
    float,
    tuple[str, str, Headers, bytes | DeltaBody],
    tuple[int, Headers, bool, StoredChunks] | None,
    TransportError | None,
]
"""What ``exchange_of`` takes: at, duration, request parts, response parts, error."""


def exchange_of(parts: Parts) -> Exchange:
    """The exchange of checked parts (``_typed.CompactDecoder.parts``): a request body stored
    as a delta is built when first read, a response's chunks when first asked for."""
    at, duration, (method, url, headers, body), response, error = parts
    request = Request(method=method, url=url, headers=headers, body=body)
    answer = None
    if response is not None:
        status, r_headers, streamed, chunks = response
        answer = Response(status=status, headers=r_headers, chunks=chunks, streamed=streamed)
    return Exchange(at=at, duration=duration, request=request, response=answer, error=error)


def _header_text(headers: Any) -> int:
    return sum(len(name) + len(value) for name, value in headers)


class CompactEncoder:
    """Writer side: plain exchange map -> stored map, with the session's header table."""

    def __init__(self) -> None:
        self.headers = HeaderTable()

    def encode(self, plain: Plain, delta: DeltaEncoder) -> tuple[Plain, int]:
        """The stored map and the bytes its reader rebuilds beyond the stored ones
        (counted against the decode budget exactly as ``CompactDecoder`` counts them)."""
        q = plain["request"]
        r = plain["response"]
        ref, middle = delta.encode(q["body"], copies=True)
        if ref is not None:  # [back, prefix, ...] -> [back, skip, ...]: skip is mostly 0
            ref[1] = delta.base_length(ref[0]) - ref[1] - ref[2]
        extra = len(q["body"]) - len(middle) + _header_text(q["headers"])
        q_headers = self.headers.encode(q["headers"], len(q["body"]))
        stored_q = [q["method"], q["url"], q_headers, middle, ref]
        stored_r = None
        if r is not None:
            new, (pre, suf, mid) = encode_chunks(r["body"], r["sizes"])
            extra += len(r["body"]) - len(new) + _header_text(r["headers"])
            r_headers = self.headers.encode(r["headers"], len(r["body"]))
            steps = _milliseconds(r["steps_us"])
            stored_r = [
                *(r["status"], r_headers, r["streamed"], new, pre, suf, mid, steps),
                r.get("assembled"),
            ]
        at, duration = stored_time(plain["at"]), stored_time(plain["duration"])
        x = [at, duration, stored_q, stored_r, plain["error"]]
        return {"k": KIND, "x": x}, extra
