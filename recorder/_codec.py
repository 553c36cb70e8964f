"""Event <-> plain dict, the only place that knows the stored field names.

The plain form holds only msgpack-native types (str, int, float, bool, None,
bytes, list, dict), keyed by a ``k`` type tag.  Dicts written by an older
schema are brought up to date by the plain functions in ``UPGRADES`` before
they are turned into events.  Unknown keys are ignored so that a newer minor
version may add optional fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import accumulate
from typing import Any

import msgspec

from evaltape.recorder._errors import TapeError
from evaltape.recorder._events import (
    Chunk,
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    Headers,
    Mode,
    Request,
    Response,
    RunnerFact,
    Scalar,
    SessionEnded,
    SessionStarted,
    Source,
    Status,
    TransportError,
    WorkspaceSnapshot,
)

Plain = dict[str, Any]

SCHEMA_VERSION = 1
"""Version of the plain event schema written today."""

SCHEMA_OF_MAJOR: Mapping[int, int] = {1: 1, 2: 1}
"""The plain event schema of each format major version (major 2 changed the frames only)."""

UPGRADES: Mapping[int, Callable[[Plain], Plain]] = {}
"""``UPGRADES[n]`` turns a plain event of schema ``n`` into schema ``n + 1``."""


class UnknownEventKind(TapeError):
    """A plain event carries a ``k`` tag this version does not know."""


_MISSING: Any = object()
_NUMBER = (int, float)
_SCALAR = (str, int, float, bool, type(None))


def _get(d: Plain, key: str, types: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """``d[key]`` checked against ``types``; ``default`` when absent, if given."""
    value = d.get(key, default)
    if value is _MISSING:
        raise ValueError(f"missing field {key!r}")
    if not isinstance(value, types) and value is not default:
        raise TypeError(f"field {key!r} holds {type(value).__name__}")
    return value


def _map(d: Plain, key: str) -> Plain:
    value: Plain = _get(d, key, dict)
    return value


def _rows(d: Plain, key: str, width: int) -> list[list[Any]]:
    """A list of fixed-width lists (pairs, chunks, files), absent meaning empty."""
    rows: list[Any] = _get(d, key, list, [])
    for row in rows:
        if type(row) is not list or len(row) != width:
            raise TypeError(f"field {key!r} holds a row that is not a list of {width}")
    return rows


def _pairs(d: Plain, key: str) -> tuple[tuple[str, Scalar], ...]:
    out: list[tuple[str, Scalar]] = []
    for row in _get(d, key, list, []):
        if type(row) is not list or len(row) != 2:
            raise TypeError(f"field {key!r} holds an item that is not [key, value]")
        k, v = row
        if type(k) is not str or not isinstance(v, _SCALAR):
            raise TypeError(f"field {key!r} holds an item that is not [str, scalar]")
        out.append((k, v))
    return tuple(out)


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
    return {
        "status": r.status,
        "headers": [list(h) for h in r.headers],
        # Chunk bytes joined (they compress better contiguous), then their
        # sizes and their times as integer microsecond steps (small ints).
        "body": b"".join([c.data for c in r.chunks]),
        "sizes": [len(c.data) for c in r.chunks],
        "steps_us": _steps_us(r.chunks),
        "streamed": r.streamed,
    }


def _steps_us(chunks: tuple[Chunk, ...]) -> list[int]:
    steps, last = [], 0
    for c in chunks:
        now = round(c.at * 1_000_000)
        steps.append(now - last)
        last = now
    return steps


def _chunks_from(d: Plain) -> tuple[bytes, list[int], list[int]]:
    """The checked body, chunk ends and chunk times (microseconds) of a plain response."""
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
    return body, ends, list(accumulate(steps))


def _build_chunks(body: bytes, ends: list[int], nows: list[int]) -> tuple[Chunk, ...]:
    """The chunks of a response, built when a reader first asks for them."""
    if nows and not -_EXACT < min(nows) <= max(nows) < _EXACT:
        return _chunks_slow(body, ends, nows)
    # The usual case, without the rounding converter (a quarter of reading a
    # tape): n / 1_000_000 for an int n below 2**53 is already the float the
    # converter's round(at, 6) gives.
    chunks = []
    start = 0
    for end, now in zip(ends, nows, strict=True):
        chunk = _new(Chunk)
        _set_at(chunk, now / 1_000_000)
        _set_data(chunk, body[start:end])
        chunks.append(chunk)
        start = end
    return tuple(chunks)


_EXACT = 2**53
_new = object.__new__
_set_at = Chunk.__dict__["at"].__set__
_set_data = Chunk.__dict__["data"].__set__
_RESPONSE_SLOTS = {
    name: Response.__dict__[name].__set__ for name in ("status", "headers", "streamed", "_packed")
}


def _chunks_slow(body: bytes, ends: list[int], nows: list[int]) -> tuple[Chunk, ...]:
    """Chunks whose times some steps put past 2**53 microseconds, built the long way."""
    chunks = []
    start = 0
    for end, now in zip(ends, nows, strict=True):
        at = now / 1_000_000
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
    _RESPONSE_SLOTS["_packed"](response, (body, lambda: _build_chunks(body, ends, nows)))
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


def _files(d: Plain) -> tuple[FileEntry, ...]:
    rows = _rows(d, "files", 3)
    for path, mode, data in rows:
        if type(path) is not str or type(mode) is not int or type(data) is not bytes:
            raise TypeError("field 'files' holds a row that is not (str, int, bytes)")
    return tuple(FileEntry(path=p, mode=m, data=b) for p, m, b in rows)


def _strings(d: Plain, key: str) -> tuple[str, ...]:
    items: list[Any] = _get(d, key, list, [])
    if not all(type(x) is str for x in items):
        raise TypeError(f"field {key!r} holds something other than strings")
    return tuple(items)


def to_plain(event: Event) -> Plain:
    """Turn an event into its plain, msgpack-ready form."""
    if isinstance(event, Exchange):
        return {
            "k": Exchange.kind,
            "at": event.at,
            "duration": event.duration,
            "request": _request_to(event.request),
            "response": None if event.response is None else _response_to(event.response),
            "error": None if event.error is None else _error_to(event.error),
        }
    if isinstance(event, SessionStarted):
        return {
            "k": SessionStarted.kind,
            "session_id": event.session_id,
            "started_at": event.started_at,
            "case_id": event.case_id,
            "attempt": event.attempt,
            "model": event.model,
            "mode": event.mode.value,
            "source": event.source.value,
            "source_detail": event.source_detail,
            "harness_commit": event.harness_commit,
            "harness_version": event.harness_version,
            "seed": event.seed,
            "replay_of": event.replay_of,
            "metadata": [list(p) for p in event.metadata],
        }
    if isinstance(event, SessionEnded):
        return {
            "k": SessionEnded.kind,
            "at": event.at,
            "status": event.status.value,
            "reason": event.reason,
        }
    if isinstance(event, HarnessEvent):
        return {
            "k": HarnessEvent.kind,
            "at": event.at,
            "name": event.name,
            "fields": [list(p) for p in event.fields],
        }
    if isinstance(event, RunnerFact):
        return {
            "k": RunnerFact.kind,
            "at": event.at,
            "fact": event.fact.value,
            "message": event.message,
        }
    if isinstance(event, WorkspaceSnapshot):
        return {
            "k": WorkspaceSnapshot.kind,
            "at": event.at,
            "files": [[f.path, f.mode, f.data] for f in event.files],
            "omitted": list(event.omitted),
            **({"redacted": list(event.redacted)} if event.redacted else {}),
        }
    raise TypeError(f"not an event: {event!r}")


def upgrade(plain: Plain, schema: int) -> Plain:
    """Apply the upgrade functions from ``schema`` up to today's schema."""
    for version in range(schema, SCHEMA_VERSION):
        plain = UPGRADES[version](plain)
    return plain


def from_plain(plain: Plain, *, exact_types: bool = False) -> Event:
    """Turn a plain dict back into an event.

    ``exact_types`` says the dict came straight from msgpack (arrays as lists,
    strings exactly ``str``), as a reader's do, so headers are checked in C.

    Raises ``UnknownEventKind`` for a tag this version does not know and
    ``TapeError`` for a dict that is missing fields or has wrong types.
    Optional fields may be absent (an older writer); unknown keys are ignored
    (a newer minor version).
    """
    kind = plain.get("k")
    if type(kind) is not str:
        raise TapeError("malformed event: no 'k' kind tag")
    headers = _exact_headers if exact_types else _headers
    try:
        if kind == Exchange.kind:
            response = _get(plain, "response", dict, None)
            error = _get(plain, "error", dict, None)
            return Exchange(
                at=_get(plain, "at", _NUMBER),
                duration=_get(plain, "duration", _NUMBER),
                request=_request_from(_map(plain, "request"), headers),
                response=None if response is None else _response_from(response, headers),
                error=None if error is None else _error_from(error),
            )
        if kind == SessionStarted.kind:
            return SessionStarted(
                session_id=_get(plain, "session_id", str),
                started_at=_get(plain, "started_at", _NUMBER),
                case_id=_get(plain, "case_id", str, ""),
                attempt=_get(plain, "attempt", int, 0),
                model=_get(plain, "model", str, ""),
                mode=Mode(_get(plain, "mode", str, "live")),
                source=Source(_get(plain, "source", str, "real_api")),
                source_detail=_get(plain, "source_detail", str, ""),
                harness_commit=_get(plain, "harness_commit", str, ""),
                harness_version=_get(plain, "harness_version", str, ""),
                seed=_get(plain, "seed", int, None),
                replay_of=_get(plain, "replay_of", str, ""),
                metadata=_pairs(plain, "metadata"),
            )
        if kind == SessionEnded.kind:
            return SessionEnded(
                at=_get(plain, "at", _NUMBER),
                status=Status(_get(plain, "status", str)),
                reason=_get(plain, "reason", str, ""),
            )
        if kind == HarnessEvent.kind:
            return HarnessEvent(
                at=_get(plain, "at", _NUMBER),
                name=_get(plain, "name", str),
                fields=_pairs(plain, "fields"),
            )
        if kind == RunnerFact.kind:
            return RunnerFact(
                at=_get(plain, "at", _NUMBER),
                fact=FactKind(_get(plain, "fact", str)),
                message=_get(plain, "message", str, ""),
            )
        if kind == WorkspaceSnapshot.kind:
            return WorkspaceSnapshot(
                at=_get(plain, "at", _NUMBER),
                files=_files(plain),
                omitted=_strings(plain, "omitted"),
                redacted=_strings(plain, "redacted"),
            )
    except (TypeError, ValueError) as exc:
        raise TapeError(f"malformed {kind!r} event: {exc}") from exc
    raise UnknownEventKind(f"unknown event kind {kind!r}")
