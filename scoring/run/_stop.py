"""The run-wide stop signal: Ctrl-C, refused credentials or the overall time limit."""

from __future__ import annotations

import enum
import threading


class StopKind(enum.Enum):
    """Why a run stopped before every job ran."""

    INTERRUPT = "interrupt"
    """Ctrl-C (SIGINT), or SIGTERM / SIGHUP (a CI runner's cancel, a closed terminal)."""
    AUTH = "auth"
    """The provider refused the credentials (401/403)."""
    LIMIT = "limit"
    """The overall time limit passed."""


class Stop:
    """The run-wide stop signal: the first ``set`` wins and names the reason."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.kind: StopKind | None = None
        self.reason = ""
        self.cause = ""
        self._lock = threading.Lock()

    def set(self, kind: StopKind, reason: str, cause: str = "") -> None:
        """Ask every job to stop; later calls keep the first reason.

        ``cause`` names what stopped the run in a few words (``SIGTERM``); the
        reason stands in for it when it is empty."""
        with self._lock:
            if self.kind is None:
                self.kind = kind
                self.reason = reason
                self.cause = cause or reason
        self.event.set()

    def refusal(self) -> str:
        """What a model call asked for after the stop is told instead of being sent."""
        return f"evaltape: the run was stopped ({self.cause}); no new model calls are sent"

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self.event.is_set()

    def __reduce__(self) -> tuple[type[Stop], tuple[()]]:
        """A stop signal crosses to another process as a fresh, unset one: each process
        has its own, and the executor that ships a job relays stops both ways."""
        return (Stop, ())
