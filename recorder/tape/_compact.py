"""The compact stored form of an exchange (event kind ``exchange4``).

The plain ``exchange`` map (``_codec.py``, ``_plain_exchange.py``) stays what every other part of
evaltape sees; this module turns it into a smaller stored map and back (and a
reader's stored map straight into its ``Exchange``, ``exchange_of``):

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
of formats 1.1 and 1.2 (``exchange2``, ``exchange3``) are read through
``upgrade``, the one function that knows them.  See docs/format.md, "Compact
exchanges".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from .._errors import TapeError
from .._events import Assembled, Exchange, Request, Response
from ._chunks import StoredChunks, encode_chunks
from ._delta import DeltaBody, DeltaDecoder, DeltaEncoder, bytes_of
from ._headers import Headers, HeaderTable
from ._plain_exchange import (
    _EXACT,
    _RESPONSE_SLOTS,
    _build_chunks,
    _error_from,
    _new,
    assembled_from,
    assembled_plain,
)
from ._plain_fields import _NUMBER, Plain

KIND = "exchange4"
"""The stored kind tag of a compact exchange as this writer stores it."""
KINDS = frozenset({KIND, "exchange3", "exchange2"})
"""The kinds a reader reads as compact exchanges (``exchange3``: format 1.2 to 2.0,
``exchange2``: format 1.1), the older two through ``upgrade``."""


def stored_time(seconds: Any) -> Any:
    """A time as ``exchange3`` stores it: whole microseconds as an int when ``seconds``
    is a float that many microseconds give back exactly (as every time the recorder
    rounds), else ``seconds`` as it is."""
    if type(seconds) is float and -_EXACT < seconds * 1_000_000 < _EXACT:
        micros = round(seconds * 1_000_000)
        # (-0.0 equals 0 but is not what 0 gives back)
        if micros / 1_000_000 == seconds and (micros or math.copysign(1.0, seconds) > 0):
            return micros
    return seconds


def _seconds(stored: Any) -> Any:
    """The time an ``exchange3`` slot holds: an int counts microseconds."""
    return stored / 1_000_000 if type(stored) is int else stored


_Answer = tuple[Any, Headers, Any, StoredChunks, list[int], Assembled | None]
"""A response's parts: status, headers, streamed, its chunks' columns (which build the
body), chunk steps in milliseconds, the assembled message."""


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


def upgrade(stored: Plain) -> Any:
    """The ``x`` of an ``exchange4`` standing for a stored ``exchange3`` or ``exchange2``
    map (times in seconds for ``exchange2``, chunk steps in microseconds for both, no
    assembled message); malformed slots are passed on as they are, for the checks."""
    x = stored.get("x")
    if type(x) is not list or len(x) != 5:
        return x
    at, duration, q, r, error = x
    if stored["k"] == "exchange2":  # seconds, an int too
        at, duration = (
            stored_time(float(t)) if type(t) is int else stored_time(t) for t in (at, duration)
        )
    if r is not None:
        r = [*_list(r, 8, "'r'")[:7], _milliseconds(r[7]), None]
    return [at, duration, q, r, error]


Parts = tuple[Any, Any, tuple[Any, Any, Headers, bytes | DeltaBody], _Answer | None, Any]
"""What ``exchange_of`` takes: at, duration, request parts, response parts, error."""


_SET_METHOD, _SET_URL, _SET_HEADERS, _SET_BODY, _SET_LAZY = (
    Request.__dict__[n].__set__ for n in ("method", "url", "headers", "body", "_lazy")
)
_SET_AT, _SET_DURATION, _SET_REQUEST, _SET_RESPONSE, _SET_ERROR = (
    Exchange.__dict__[n].__set__ for n in ("at", "duration", "request", "response", "error")
)


def exchange_of(
    at: Any,
    duration: Any,
    request: tuple[Any, Any, Headers, bytes | DeltaBody],
    response: _Answer | None,
    error: Any,
) -> Exchange:
    """The exchange of parts a reader has already checked (headers as pairs of str, bodies
    as bytes, or a request body as the ``DeltaBody`` its ``Request.body`` is built from
    when first read, chunk columns and steps as ints adding up), checking the rest as
    ``from_plain`` does, with its wording.  ``response`` is ``(status, headers, streamed,
    body, stored columns, steps in milliseconds, assembled)``; its chunks are built only
    when asked for, as
    ``from_plain`` builds them."""
    try:
        if not isinstance(at, _NUMBER):
            raise TypeError(f"field 'at' holds {type(at).__name__}")
        if not isinstance(duration, _NUMBER):
            raise TypeError(f"field 'duration' holds {type(duration).__name__}")
        method, url, headers, body = request
        for key, value in (("method", method), ("url", url)):
            if not isinstance(value, str):
                raise TypeError(f"field {key!r} holds {type(value).__name__}")
        if error is not None and not isinstance(error, dict):
            raise TypeError(f"field 'error' holds {type(error).__name__}")
        failure = None if error is None else _error_from(error)
        built = _new(Request)
        _SET_METHOD(built, method)
        _SET_URL(built, url)
        _SET_HEADERS(built, headers)
        if type(body) is bytes:
            _SET_BODY(built, body)
            _SET_LAZY(built, None)
        else:  # a delta, built when first asked for
            _SET_LAZY(built, body)
        answer = None
        if response is not None:
            status, r_headers, streamed, stored, steps, assembled = response
            if not isinstance(status, int):
                raise TypeError(f"field 'status' holds {type(status).__name__}")
            if not isinstance(streamed, bool):
                raise TypeError(f"field 'streamed' holds {type(streamed).__name__}")
            answer = _new(Response)
            _RESPONSE_SLOTS["status"](answer, status)
            _RESPONSE_SLOTS["headers"](answer, r_headers)
            _RESPONSE_SLOTS["streamed"](answer, streamed)
            _RESPONSE_SLOTS["assembled"](answer, assembled)
            _RESPONSE_SLOTS["_packed"](
                answer,
                (
                    stored.body,
                    lambda: _build_chunks(
                        stored.body(), list(accumulate(stored.sizes)), list(accumulate(steps))
                    ),
                ),
            )
    except (TypeError, ValueError) as exc:
        raise TapeError(f"malformed 'exchange' event: {exc}") from exc
    exchange = _new(Exchange)
    _SET_AT(exchange, at)
    _SET_DURATION(exchange, duration)
    _SET_REQUEST(exchange, built)
    _SET_RESPONSE(exchange, answer)
    _SET_ERROR(exchange, failure)
    return exchange


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


def _list(value: Any, width: int, what: str) -> list[Any]:
    if type(value) is not list or len(value) != width:
        raise ValueError(f"compact exchange: {what} is not a list of {width}")
    return value


class CompactDecoder:
    """Reader side: stored map -> exchange, mirroring ``CompactEncoder``."""

    def __init__(self) -> None:
        self.headers = HeaderTable()

    def decode(
        self, stored: Plain, packed: int, delta: DeltaDecoder, charge: Callable[[int], None]
    ) -> Plain:
        """The plain exchange map of a stored one that packed to ``packed`` bytes;
        ``charge(n)`` is called with its decoded size before any body is rebuilt.
        ``ValueError`` for anything malformed."""
        at, duration, q, r, error = self._parts(stored, packed, delta, charge)
        method, url, headers, body = q
        request = {"method": method, "url": url, "headers": [list(h) for h in headers]}
        request["body"] = bytes_of(body)
        response = None
        if r is not None:
            status, r_headers, streamed, columns, steps, assembled = r
            response = {
                "status": status,
                "headers": [list(h) for h in r_headers],
                "streamed": streamed,
                "body": columns.body(),
                "sizes": columns.sizes,
                "steps_us": [step * 1000 for step in steps],
            }
            if assembled is not None:
                response["assembled"] = assembled_plain(assembled)
        return {
            "k": "exchange",
            "at": at,
            "duration": duration,
            "request": request,
            "response": response,
            "error": error,
        }

    def exchange(
        self, stored: Plain, packed: int, delta: DeltaDecoder, charge: Callable[[int], None]
    ) -> Exchange:
        """``decode``'s exchange built as the event (what ``from_plain`` would make of
        it), without the plain map between; ``ValueError`` or ``TapeError`` if malformed."""
        return exchange_of(*self._parts(stored, packed, delta, charge))

    def _parts(
        self, stored: Plain, packed: int, delta: DeltaDecoder, charge: Callable[[int], None]
    ) -> Parts:
        x = stored.get("x") if stored["k"] == KIND else upgrade(stored)
        at, duration, q, r, error = _list(x, 5, "'x'")
        at, duration = _seconds(at), _seconds(duration)
        method, url, q_headers, middle, ref = _list(q, 5, "'q'")
        if type(middle) is not bytes:
            raise ValueError("compact exchange: the request body is not bytes")
        if ref is not None and not (
            type(ref) is list and len(ref) >= 3 and all(type(x) is int for x in ref)
        ):
            raise ValueError("compact exchange: the body delta is not a list of ints")
        answer = None
        if r is not None:
            status, r_headers, streamed, new, pre, suf, mid, steps, made = _list(r, 9, "'r'")
            if type(new) is not bytes:
                raise ValueError("compact exchange: the chunks' new bytes are not bytes")
            assembled = None if made is None else assembled_from(made)
            answer = (status, r_headers, streamed, new, pre, suf, mid, steps, assembled)
        query = (method, url, q_headers, middle, ref)
        return self.checked(at, duration, query, answer, error, packed, delta, charge)

    def checked(
        self,
        at: Any,
        duration: Any,
        query: tuple[Any, Any, Any, bytes, list[int] | None],
        answer: tuple[Any, Any, Any, bytes, Any, Any, Any, Any, Assembled | None] | None,
        error: Any,
        packed: int,
        delta: DeltaDecoder,
        charge: Callable[[int], None],
        *,
        typed: bool = False,
    ) -> Parts:
        """``_parts`` of a stored exchange whose shape is checked (the times in seconds,
        the request body and the new bytes as bytes, the delta as a list of at least 3
        ints): what its header table, delta and chunk columns say.  ``typed``: the
        columns are known to be lists of ints, the lengths among them not negative."""
        method, url, q_headers, middle, ref = query
        if ref is not None:
            ref[1] = delta.base_length(ref[0]) - ref[1] - ref[2]
        body_size = delta.size(ref, middle)
        headers, text = self.headers.pairs(q_headers, body_size)
        size = packed + body_size - len(middle) + text
        chunks = None
        if answer is not None:
            status, r_headers, streamed, new, pre, suf, mid, steps, assembled = answer
            chunks = StoredChunks(new, pre, suf, mid, steps, typed=typed)
            r_pairs, text = self.headers.pairs(r_headers, chunks.size)
            size += chunks.size - len(new) + text
        charge(size)
        request = (method, url, headers, delta.decode_lazy(ref, middle))
        if chunks is None:
            return at, duration, request, None, error
        response = (status, r_pairs, streamed, chunks, chunks.steps, assembled)
        return at, duration, request, response, error
