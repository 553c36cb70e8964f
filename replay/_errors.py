"""The replay package's exceptions: one base class, four distinct misses.

Each miss says which session, which request of this replay (1-based, in
arrival order) and what to do next, so a red CI line is actionable alone.
"""

from __future__ import annotations


class ReplayError(Exception):
    """Base class of every replay error."""


class UnknownMode(ReplayError, ValueError):
    """A record mode name that is not one of the valid ones."""


class NoRecording(ReplayError):
    """Nothing was recorded for this session, or for this endpoint in it."""

    def __init__(self, message: str, *, session_id: str = "", ordinal: int = 0) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.ordinal = ordinal


class Diverged(ReplayError):
    """A request matches no recorded request: the harness sent something new.

    ``path`` is the first differing JSON path of the request body (or
    ``method``, ``path``, ``query.<name>``, ``header <name>``), ``sent`` and
    ``recorded`` its two values (shortened), ``nearest`` the 1-based ordinal
    of the recorded request that came closest.
    """

    def __init__(
        self,
        message: str,
        *,
        session_id: str,
        ordinal: int,
        path: str,
        sent: str,
        recorded: str,
        nearest: int,
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.ordinal = ordinal
        self.path = path
        self.sent = sent
        self.recorded = recorded
        self.nearest = nearest


class Exhausted(ReplayError):
    """The request matches recorded ones, but all their responses were served."""

    def __init__(self, message: str, *, session_id: str, ordinal: int, recorded: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.ordinal = ordinal
        self.recorded = recorded


class UnusedRecordings(ReplayError):
    """The replay ended with recorded calls that nobody requested."""

    def __init__(self, message: str, *, session_id: str, unused: tuple[int, ...]) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.unused = unused
