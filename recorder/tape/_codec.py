"""Event <-> plain dict, the only place that knows the stored field names.

The plain form holds only msgpack-native types (str, int, float, bool, None,
bytes, list, dict), keyed by a ``k`` type tag.  Dicts written by an older
schema are brought up to date by the plain functions in ``UPGRADES`` before
they are turned into events.  Unknown keys are ignored so that a newer minor
version may add optional fields.  An exchange's plain map is what the writer
hands to its compact encoder (``_compact.py``); a reader decodes exchanges from
their stored form, never from this map.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._errors import TapeError
from .._events import (
    Assembled,
    Chunk,
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
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
"""An event's plain form: msgpack-native values keyed by field name."""

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


def _files(d: Plain) -> tuple[FileEntry, ...]:
    rows: list[Any] = _get(d, "files", list, [])
    for row in rows:
        if type(row) is not list or len(row) != 3:
            raise TypeError("field 'files' holds a row that is not a list of 3")
    seen: set[str] = set()
    for path, mode, data in rows:
        if type(path) is not str or type(mode) is not int or type(data) is not bytes:
            raise TypeError("field 'files' holds a row that is not (str, int, bytes)")
        if not plain_path(path):
            raise ValueError(f"workspace path {path!r} is not a plain relative path")
        if path in seen:
            raise ValueError(f"workspace path {path!r} is there twice")
        seen.add(path)
    return tuple(FileEntry(path=p, mode=m, data=b) for p, m, b in rows)


def plain_path(path: str) -> bool:
    """Whether a snapshot path is written the one way a snapshot writes it: relative, with
    no empty, ``.`` or ``..`` segment and no trailing slash.  ``./check.py`` or
    ``check.py/`` would be a second name for ``check.py``: a tape holding one could have a
    restored workspace differ from what the checks compared, so it is refused."""
    return (
        bool(path)
        and "\0" not in path
        and all(part not in ("", ".", "..") for part in path.split("/"))
    )


def _strings(d: Plain, key: str) -> tuple[str, ...]:
    items: list[Any] = _get(d, key, list, [])
    if not all(type(x) is str for x in items):
        raise TypeError(f"field {key!r} holds something other than strings")
    return tuple(items)


def _request_to(r: Request) -> Plain:
    return {
        "method": r.method,
        "url": r.url,
        "headers": [list(h) for h in r.headers],
        "body": r.body,
    }


def _response_to(r: Response) -> Plain:
    plain = {
        "status": r.status,
        "headers": [list(h) for h in r.headers],
        # Chunk bytes joined, then their sizes and their times as integer
        # microsecond steps (``_compact.CompactEncoder`` stores them as columns).
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


def _steps_us(chunks: tuple[Chunk, ...]) -> list[int]:
    steps, last = [], 0
    for c in chunks:
        now = round(c.at * 1_000_000)
        steps.append(now - last)
        last = now
    return steps


def _error_to(e: TransportError) -> Plain:
    return {
        "type": e.type,
        "message": e.message,
        "after_chunks": e.after_chunks,
        "after_bytes": e.after_bytes,
    }


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


def from_plain(plain: Plain) -> Event:
    """Turn a plain dict back into an event other than an exchange (a reader decodes
    those from their stored form, ``_pack.Unpacker.unpack_event``).

    Raises ``UnknownEventKind`` for a tag this version does not know and
    ``TapeError`` for a dict that is missing fields or has wrong types.
    Optional fields may be absent (an older writer); unknown keys are ignored
    (a newer minor version).
    """
    kind = plain.get("k")
    if type(kind) is not str:
        raise TapeError("malformed event: no 'k' kind tag")
    try:
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
