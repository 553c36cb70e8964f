"""The session writer of one attempt, plus an in-memory copy of every event for scoring."""

from __future__ import annotations

import threading
from typing import Any

from evaltape.recorder import Event, Exchange, SessionEnded, SessionStarted, Status


class Tee:
    """Appends to the tape and keeps the events; an abandoned agent thread is dropped.

    Every event but an exchange passes ``redactor`` first
    (``Redactor.redact_event``); exchanges come redacted from the recording
    transport, which the runner builds with the same redactor, and are not
    scanned twice.  What is kept for scoring is exactly what the tape holds."""

    def __init__(self, writer: Any, header: SessionStarted, redactor: Any = None) -> None:
        self.writer = writer
        self.redactor = redactor
        self.events: list[Event] = [header]
        self._lock = threading.Lock()
        self._closed = False

    def now(self) -> float:
        """The writer's clock."""
        now: float = self.writer.now()
        return now

    def _safe(self, event: Any) -> Any:
        if self.redactor is None or isinstance(event, Exchange):
            return event
        return self.redactor.redact_event(event)

    def _reason(self, reason: str) -> str:
        return reason if self.redactor is None else str(self.redactor.redact_text(reason))

    def append(self, event: Any) -> None:
        """Write ``event`` and keep it; after ``end`` it is dropped."""
        event = self._safe(event)
        with self._lock:
            if self._closed:  # an abandoned agent thread still talking: dropped
                return
            self.writer.append(event)
            self.events.append(event)

    def provisional(self, status: Status, reason: str) -> tuple[Event, ...]:
        """The events so far plus the end they would get now, for scoring before the end."""
        with self._lock:
            end = SessionEnded(at=self.writer.now(), status=status, reason=self._reason(reason))
            return (*self.events, end)

    def end(self, status: Status, reason: str) -> tuple[Event, ...]:
        """End the session on the tape and return every event."""
        with self._lock:
            self._closed = True
            reason = self._reason(reason)
            self.events.append(SessionEnded(at=self.writer.now(), status=status, reason=reason))
            self.writer.end(status, reason)
            return tuple(self.events)
