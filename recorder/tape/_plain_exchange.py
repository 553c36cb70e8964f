"""The plain form of an exchange's parts: request, response (chunks built lazily), error.

Chunk times are whole milliseconds in an event (``Chunk.at``); the plain map keeps
them as steps of microseconds (``steps_us``), as format 1.0 stored them."""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

import msgspec

from .._events import Assembled, Chunk, Headers, Request, Response, TransportError
from ._plain_fields import Plain, _get


def _headers(d: Plain) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for row in _get(d, "headers", list, []):
        if type(row) is not list or len(row) != 2:
            raise TypeError("field 'headers' holds an item that is not [name, value]")
        k, v = row
        if type(k) is not str or type(v) is not str:
            raise TypeError("field 'headers' holds an item that is not [str, str]")
        out.append((k, v))
    return tuple(out)


def _request_to(r: Request) -> Plain:
    return {
        "method": r.method,
        "url": r.url,
        "headers": [list(h) for h in r.headers],
        "body": r.body,
    }


def _exact_headers(d: Plain) -> Headers:
    """``_headers`` of a dict straight from msgpack, checked and built in C."""
    try:
        headers: Headers = msgspec.convert(d.get("headers", []), Headers)
    except msgspec.ValidationError:
        return _headers(d)  # which words the problem
    return headers


def _request_from(d: Plain, headers: Callable[[Plain], Headers] = _headers) -> Request:
    return Request(
        method=_get(d, "method", str),
        url=_get(d, "url", str),
        headers=headers(d),
        body=_get(d, "body", bytes),
    )


def _response_to(r: Response) -> Plain:
    plain = {
        "status": r.status,
        "headers": [list(h) for h in r.headers],
        # Chunk bytes joined (they compress better contiguous), then their
        # sizes and their times as integer microsecond steps (small ints).
        "body": b"".join([c.data for c in r.chunks]),
        "sizes": [len(c.data) for c in r.chunks],
        "steps_us": _steps_us(r.chunks),
        "streamed": r.streamed,
    }
    if r.assembled is not None:
        plain["assembled"] = assembled_plain(r.assembled)
    return plain


def assembled_plain(a: Assembled) -> list[Any]:
    """An assembled message as stored: ``[version, model, response_id, output_text,
    thinking, finish_reason, tool_calls, usage, error]``, ``tool_calls`` a list of
    ``[id, name, arguments]``, ``usage`` nil or ``[input, output, cache_read,
    cache_write, reasoning, cost]``."""
    return [
        *(a.version, a.model, a.response_id, a.output_text, a.thinking, a.finish_reason),
        [list(c) for c in a.tool_calls],
        None if a.usage is None else list(a.usage),
        a.error,
    ]


_SLOTS: tuple[type | tuple[type, ...], ...] = (
    *(int, str, str, str, str, str, list),
    (list, type(None)),
    str,
)


def assembled_from(stored: Any) -> Assembled:
    """``assembled_plain`` undone, every slot checked (``ValueError`` naming the first
    that is wrong)."""
    if type(stored) is not list or len(stored) != len(_SLOTS):
        raise ValueError(f"the assembled message is not a list of {len(_SLOTS)}")
    for n, (value, kinds) in enumerate(zip(stored, _SLOTS, strict=True)):
        if not isinstance(value, kinds) or type(value) is bool:
            raise ValueError(f"slot {n} of the assembled message holds {type(value).__name__}")
    version, model, rid, text, thinking, finish, calls, usage, error = stored
    for call in calls:
        if type(call) is not list or len(call) != 3 or not all(type(v) is str for v in call):
            raise ValueError("the assembled message holds a tool call that is not 3 str")
    if usage is not None and not (
        len(usage) == 6
        and all(type(n) is int for n in usage[:5])
        and (usage[5] is None or type(usage[5]) in (int, float))
    ):
        raise ValueError("the assembled message's usage is not 5 ints and a cost")
    return Assembled(
        version=version,
        model=model,
        response_id=rid,
        output_text=text,
        thinking=thinking,
        finish_reason=finish,
        tool_calls=tuple(tuple(c) for c in calls),
        usage=None if usage is None else tuple(usage),
        error=error,
    )


def _steps_us(chunks: tuple[Chunk, ...]) -> list[int]:
    steps, last = [], 0
    for c in chunks:
        now = round(c.at * 1_000_000)
        steps.append(now - last)
        last = now
    return steps


def _chunks_from(d: Plain) -> tuple[bytes, list[int], list[int]]:
    """The checked body, chunk ends and chunk times (whole milliseconds) of a plain
    response."""
    body = _get(d, "body", bytes, b"")
    sizes = _get(d, "sizes", list, [])
    steps = _get(d, "steps_us", list, [])
    if len(sizes) != len(steps):
        raise ValueError("fields 'sizes' and 'steps_us' differ in length")
    if sizes and (set(map(type, sizes)) != {int} or min(sizes) < 0):
        raise ValueError("field 'sizes' does not add up to the length of 'body'")
    ends = list(accumulate(sizes))
    if (ends[-1] if ends else 0) != len(body):
        raise ValueError("field 'sizes' does not add up to the length of 'body'")
    if steps and set(map(type, steps)) != {int}:
        raise TypeError("field 'steps_us' holds a value that is not an int")
    return body, ends, [round(now / 1000) for now in accumulate(steps)]


def _build_chunks(body: bytes, ends: list[int], nows: list[int]) -> tuple[Chunk, ...]:
    """The chunks of a response, built when a reader first asks for them (``nows``: each
    chunk's time in whole milliseconds)."""
    if nows and not -_EXACT < min(nows) <= max(nows) < _EXACT:
        return _chunks_slow(body, ends, nows)
    # The usual case, without the rounding converter (a quarter of reading a
    # tape): n / 1000 for an int n below 2**53 is already the float the
    # converter's rounding gives.
    chunks = []
    start = 0
    for end, now in zip(ends, nows, strict=True):
        chunk = _new(Chunk)
        _set_at(chunk, now / 1000)
        _set_data(chunk, body[start:end])
        chunks.append(chunk)
        start = end
    return tuple(chunks)


_EXACT = 2**53
"""Counts below this are exact as floats."""
_new = object.__new__
_set_at = Chunk.__dict__["at"].__set__
_set_data = Chunk.__dict__["data"].__set__
_RESPONSE_SLOTS = {
    name: Response.__dict__[name].__set__
    for name in ("status", "headers", "streamed", "assembled", "_packed")
}


def _chunks_slow(body: bytes, ends: list[int], nows: list[int]) -> tuple[Chunk, ...]:
    """Chunks whose times some steps put past 2**53 milliseconds, built the long way."""
    chunks = []
    start = 0
    for end, now in zip(ends, nows, strict=True):
        at = now / 1000
        if -_EXACT < now < _EXACT:
            chunk = _new(Chunk)
            _set_at(chunk, at)
            _set_data(chunk, body[start:end])
            chunks.append(chunk)
        else:
            chunks.append(Chunk(at=at, data=body[start:end]))
        start = end
    return tuple(chunks)


def _response_from(d: Plain, headers_from: Callable[[Plain], Headers] = _headers) -> Response:
    """A response whose chunks are built only when asked for (``Response._packed``):
    the fold reads only the joined body."""
    body, ends, nows = _chunks_from(d)
    status = _get(d, "status", int)
    headers = headers_from(d)
    streamed = _get(d, "streamed", bool, False)
    response = _new(Response)
    _RESPONSE_SLOTS["status"](response, status)
    _RESPONSE_SLOTS["headers"](response, headers)
    _RESPONSE_SLOTS["streamed"](response, streamed)
    made = d.get("assembled")
    _RESPONSE_SLOTS["assembled"](response, None if made is None else assembled_from(made))
    _RESPONSE_SLOTS["_packed"](response, (lambda: body, lambda: _build_chunks(body, ends, nows)))
    return response


def _error_to(e: TransportError) -> Plain:
    return {
        "type": e.type,
        "message": e.message,
        "after_chunks": e.after_chunks,
        "after_bytes": e.after_bytes,
    }


def _error_from(d: Plain) -> TransportError:
    return TransportError(
        type=_get(d, "type", str),
        message=_get(d, "message", str),
        after_chunks=_get(d, "after_chunks", int, 0),
        after_bytes=_get(d, "after_bytes", int, 0),
    )
