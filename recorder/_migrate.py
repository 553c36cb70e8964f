"""Rewriting a tape as today's writer writes it (``evals/migrate_tapes.py``).

Older tapes read as they are (``recorder/tape/_compact.py``, ``upgrade``); this is for
the tapes a project keeps and replays, so that they take what a recording keeps
today (docs/format.md, "What a recording keeps"): per-request response headers
dropped, chunk times to the millisecond (as any reader already reads them), and
each streamed response's message assembled once.  Every session keeps its id,
header, events and end; the new file replaces the old one only when whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import attrs

from ._errors import TapeError
from ._events import Event, Exchange, SessionEnded
from ._transport import assembled_exchange
from ._volatile import kept_headers
from .tape._buffer import SessionBuffer, append_session
from .tape._reader import TapeReader


def _stopped(at: float) -> Callable[[], float]:
    """A clock that says ``at``: the session's end, as it was recorded."""
    return lambda: at


def migrated(event: Event) -> Event:
    """``event`` as a recording today would have kept it."""
    if not isinstance(event, Exchange) or event.response is None:
        return event
    response = event.response
    headers = kept_headers(response.status, response.headers)
    if headers != response.headers:
        event = attrs.evolve(event, response=attrs.evolve(response, headers=headers))
    return assembled_exchange(event)


def migrate_tape(path: str | os.PathLike[str]) -> int:
    """Rewrite the tape at ``path`` with today's writer; the number of sessions.

    Refuses (``TapeError``, nothing changed) a tape with a damaged or unfinished
    session: a migration never drops a recorded event."""
    where = Path(path)
    reader = TapeReader(where, strict=True)
    sessions = list(reader.sessions())
    for session in sessions:
        if not session.complete:
            raise TapeError(f"{where}: session {session.header.session_id} is not complete")
    partial = where.with_name(where.name + ".migrating")
    partial.unlink(missing_ok=True)
    try:
        for session in sessions:
            end = session.events[-1]
            assert isinstance(end, SessionEnded)  # (a complete session ends so)
            buffer = SessionBuffer(session.header, clock=_stopped(end.at))
            for event in session.events[1:-1]:
                buffer.append(migrated(event))
            buffer.end(end.status, end.reason)
            append_session(partial, buffer.data)
        os.replace(partial, where)
    finally:
        partial.unlink(missing_ok=True)
    return len(sessions)
