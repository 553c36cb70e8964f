"""Budgets that bound what one tape can make a reader allocate, shared by writer and reader.

A tape is small on disk and may be large in memory: request bodies are
delta-encoded against earlier ones, so a few bytes can stand for a copy of a
big earlier body.  Both sides count the *decoded* size of every event (its
msgpack bytes with the request body rebuilt) against a budget per event and
per session.  The reader refuses a session that goes past either budget
before allocating the body that would do it; the writer refuses, before
writing anything, an event that would take its session past them, so it never
writes what its own reader would refuse.
"""

from __future__ import annotations

from ._frames import MAX_EVENT_BYTES

MAX_SESSION_BYTES = 512 * 1024 * 1024
"""Most bytes one session's events may decode to, deltas rebuilt (bounds memory on
hostile input; a long real session decodes to tens of megabytes)."""

END_RESERVE = 1024 * 1024
"""Bytes of a session's budget a writer keeps for the session's end event."""


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


class DecodeBudget:
    """Counts one session's decoded bytes; ``charge`` refuses what goes past a limit."""

    def __init__(
        self,
        *,
        event_limit: int = MAX_EVENT_BYTES,
        session_limit: int = MAX_SESSION_BYTES,
    ) -> None:
        self.event_limit = event_limit
        self.session_limit = session_limit
        self.used = 0

    def check(self, size: int, *, reserve: int = 0) -> str:
        """Why an event decoding to ``size`` bytes is refused, "" if it fits."""
        if size > self.event_limit:
            return f"event decodes to {size} bytes, over the {_mib(self.event_limit)} event limit"
        if self.used + size > self.session_limit - reserve:
            return (
                f"session decodes past its {_mib(self.session_limit)} budget "
                f"({self.used} bytes before this {size}-byte event)"
            )
        return ""

    def charge(self, size: int, *, reserve: int = 0) -> None:
        """Count an event of ``size`` decoded bytes; ``ValueError`` if it does not fit."""
        problem = self.check(size, reserve=reserve)
        if problem:
            raise ValueError(problem)
        self.used += size


def compress_bound(size: int) -> int:
    """Most bytes zstd may produce for ``size`` input bytes (its ZSTD_COMPRESSBOUND)."""
    margin = ((128 * 1024 - size) >> 11) if size < 128 * 1024 else 0
    return size + (size >> 8) + margin + 64
