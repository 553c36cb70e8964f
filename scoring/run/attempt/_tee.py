"""The session writer of one attempt, plus the attempt's fold, fed as events are taken."""

from __future__ import annotations

import threading
from typing import Any

from evaltape.recorder import (
    Event,
    Exchange,
    ModelCall,
    Session,
    SessionEnded,
    SessionStarted,
    Status,
)
from evaltape.recorder._shared import SessionFold


class Tee:
    """Appends to the tape and folds each event once, as it is taken; an abandoned agent
    thread is dropped.

    Every event but an exchange passes ``redactor`` first
    (``Redactor.redact_event``); exchanges come redacted from the recording
    transport, which the runner builds with the same redactor, and are not
    scanned twice.  What is folded for scoring is exactly what the tape holds:
    ``provisional`` (scoring before the end, so the judge's call lands on this
    tape) and ``end`` are two views of one fold, no exchange decoded twice."""

    def __init__(self, writer: Any, header: SessionStarted, redactor: Any = None) -> None:
        self.writer = writer
        self.redactor = redactor
        self.events: list[Event] = [header]
        self._fold = SessionFold(header)
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
        """Write ``event``, keep it and fold it in; after ``end`` it is dropped."""
        event = self._safe(event)
        with self._lock:
            if self._closed:  # an abandoned agent thread still talking: dropped
                return
            self.writer.append(event)
            self.events.append(event)
            self._fold.add(event)

    def last_exchange(self) -> tuple[Exchange, ModelCall | None] | None:
        """The agent's last exchange so far and its model call (None: not a model call)."""
        with self._lock:
            return self._fold.last_exchange

    def provisional(self, status: Status, reason: str) -> Session:
        """The session so far with the end it would get now, for scoring before the end."""
        with self._lock:
            end = SessionEnded(at=self.writer.now(), status=status, reason=self._reason(reason))
            return self._fold.view(end)

    def end(self, status: Status, reason: str) -> Session:
        """End the session on the tape; its whole Session view."""
        with self._lock:
            self._closed = True
            reason = self._reason(reason)
            end = SessionEnded(at=self.writer.now(), status=status, reason=reason)
            self.events.append(end)
            self._fold.add(end)
            self.writer.end(status, reason, at=end.at)  # the very end the fold holds
            return self._fold.view()
