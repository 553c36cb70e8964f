"""Event <-> plain dict, the only place that knows the stored field names.

The plain form holds only msgpack-native types (str, int, float, bool, None,
bytes, list, dict), keyed by a ``k`` type tag.  Dicts written by an older
schema are brought up to date by the plain functions in ``UPGRADES`` before
they are turned into events.  Unknown keys are ignored so that a newer minor
version may add optional fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from recorder._errors import TapeError
from recorder._events import (
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

SCHEMA_VERSION = 1
"""Version of the plain event schema written today."""

UPGRADES: Mapping[int, Callable[[Plain], Plain]] = {}
"""``UPGRADES[n]`` turns a plain event of schema ``n`` into schema ``n + 1``."""


class UnknownEventKind(TapeError):
    """A plain event carries a ``k`` tag this version does not know."""


def _pairs(items: Any) -> tuple[tuple[str, Scalar], ...]:
    return tuple((str(k), v) for k, v in items)


def _headers(items: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in items)


def _request_to(r: Request) -> Plain:
    return {
        "method": r.method,
        "url": r.url,
        "headers": [list(h) for h in r.headers],
        "body": r.body,
    }


def _request_from(d: Plain) -> Request:
    return Request(
        method=d["method"], url=d["url"], headers=_headers(d.get("headers", ())), body=d["body"]
    )


def _response_to(r: Response) -> Plain:
    return {
        "status": r.status,
        "headers": [list(h) for h in r.headers],
        "chunks": [[c.at, c.data] for c in r.chunks],
        "streamed": r.streamed,
    }


def _response_from(d: Plain) -> Response:
    return Response(
        status=d["status"],
        headers=_headers(d.get("headers", ())),
        chunks=tuple(Chunk(at=at, data=data) for at, data in d.get("chunks", ())),
        streamed=bool(d.get("streamed", False)),
    )


def _error_to(e: TransportError) -> Plain:
    return {
        "type": e.type,
        "message": e.message,
        "after_chunks": e.after_chunks,
        "after_bytes": e.after_bytes,
    }


def _error_from(d: Plain) -> TransportError:
    return TransportError(
        type=d["type"],
        message=d["message"],
        after_chunks=d.get("after_chunks", 0),
        after_bytes=d.get("after_bytes", 0),
    )


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
        }
    raise TypeError(f"not an event: {event!r}")


def upgrade(plain: Plain, schema: int) -> Plain:
    """Apply the upgrade functions from ``schema`` up to today's schema."""
    for version in range(schema, SCHEMA_VERSION):
        plain = UPGRADES[version](plain)
    return plain


def from_plain(plain: Plain) -> Event:
    """Turn a plain dict back into an event.

    Raises ``UnknownEventKind`` for a tag this version does not know and
    ``TapeError`` for a dict that is missing fields or has wrong types.
    """
    kind = plain.get("k")
    try:
        if kind == Exchange.kind:
            response = plain.get("response")
            error = plain.get("error")
            return Exchange(
                at=plain["at"],
                duration=plain["duration"],
                request=_request_from(plain["request"]),
                response=None if response is None else _response_from(response),
                error=None if error is None else _error_from(error),
            )
        if kind == SessionStarted.kind:
            return SessionStarted(
                session_id=plain["session_id"],
                started_at=plain["started_at"],
                case_id=plain.get("case_id", ""),
                attempt=plain.get("attempt", 0),
                model=plain.get("model", ""),
                mode=Mode(plain.get("mode", "live")),
                source=Source(plain.get("source", "real_api")),
                source_detail=plain.get("source_detail", ""),
                harness_commit=plain.get("harness_commit", ""),
                harness_version=plain.get("harness_version", ""),
                seed=plain.get("seed"),
                replay_of=plain.get("replay_of", ""),
                metadata=_pairs(plain.get("metadata", ())),
            )
        if kind == SessionEnded.kind:
            return SessionEnded(
                at=plain["at"], status=Status(plain["status"]), reason=plain.get("reason", "")
            )
        if kind == HarnessEvent.kind:
            return HarnessEvent(
                at=plain["at"], name=plain["name"], fields=_pairs(plain.get("fields", ()))
            )
        if kind == RunnerFact.kind:
            return RunnerFact(
                at=plain["at"], fact=FactKind(plain["fact"]), message=plain.get("message", "")
            )
        if kind == WorkspaceSnapshot.kind:
            return WorkspaceSnapshot(
                at=plain["at"],
                files=tuple(
                    FileEntry(path=p, mode=m, data=d) for p, m, d in plain.get("files", ())
                ),
                omitted=tuple(plain.get("omitted", ())),
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TapeError(f"malformed {kind!r} event: {type(exc).__name__}: {exc}") from exc
    raise UnknownEventKind(f"unknown event kind {kind!r}")
