"""Redacting whole events: every text and byte field a runner or an agent can put on a tape.

Exchanges go through ``Redactor.redact_exchange``; the other events carry
text (harness event names and fields, runner fact messages, end reasons,
session metadata) and files (workspace snapshots).  A snapshot file whose
content changed is named in ``WorkspaceSnapshot.redacted``, so a later
check knows it runs on masked content.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from .._events import (
    Event,
    Exchange,
    HarnessEvent,
    RunnerFact,
    Scalar,
    SessionEnded,
    SessionStarted,
    WorkspaceSnapshot,
)


class _Masks(Protocol):
    def redact_text(self, text: str) -> str: ...

    def redact_bytes(self, data: bytes) -> bytes: ...

    def redact_exchange(self, exchange: Exchange) -> Exchange: ...


def _pairs(
    redactor: _Masks, pairs: tuple[tuple[str, Scalar], ...]
) -> tuple[tuple[str, Scalar], ...]:
    out = tuple(
        (redactor.redact_text(k), redactor.redact_text(v) if isinstance(v, str) else v)
        for k, v in pairs
    )
    return pairs if out == pairs else out


def redact_event(redactor: _Masks, event: Event) -> Event:
    """A copy of ``event`` with every secret masked (``event`` itself if none)."""
    if isinstance(event, Exchange):
        return redactor.redact_exchange(event)
    if isinstance(event, HarnessEvent):
        name = redactor.redact_text(event.name)
        fields = _pairs(redactor, event.fields)
        if name is event.name and fields is event.fields:
            return event
        return attrs.evolve(event, name=name, fields=fields)
    if isinstance(event, RunnerFact):
        message = redactor.redact_text(event.message)
        return event if message is event.message else attrs.evolve(event, message=message)
    if isinstance(event, SessionEnded):
        reason = redactor.redact_text(event.reason)
        return event if reason is event.reason else attrs.evolve(event, reason=reason)
    if isinstance(event, SessionStarted):
        metadata = _pairs(redactor, event.metadata)
        return event if metadata is event.metadata else attrs.evolve(event, metadata=metadata)
    if isinstance(event, WorkspaceSnapshot):
        return _snapshot(redactor, event)
    return event


def _snapshot(redactor: _Masks, event: WorkspaceSnapshot) -> WorkspaceSnapshot:
    files = []
    marked = list(event.redacted)
    for entry in event.files:
        data = redactor.redact_bytes(entry.data)
        path = redactor.redact_text(entry.path)
        if data is not entry.data:
            marked.append(path)
        if data is not entry.data or path is not entry.path:
            entry = attrs.evolve(entry, data=data, path=path)
        files.append(entry)
    if tuple(marked) == event.redacted and all(
        a is b for a, b in zip(files, event.files, strict=True)
    ):
        return event
    return attrs.evolve(event, files=tuple(files), redacted=tuple(sorted(set(marked))))
