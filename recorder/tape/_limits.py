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

from .._errors import OverBudget
from ._frames import MAX_EVENT_BYTES

MAX_SESSION_BYTES = 512 * 1024 * 1024
"""Most bytes one session's events may decode to, deltas rebuilt (bounds memory on
hostile input; a long real session decodes to tens of megabytes)."""

MAX_TAPE_BYTES = 1024 * 1024 * 1024
"""Most bytes the whole tape may decode to, deltas rebuilt, when a command that reads
every event of it (``show``, ``lint``, ``rescore``) reads it: the session budget
bounds memory, this bounds the work, since a tape of a few KB can hold many sessions
that each decode close to their budget."""

END_RESERVE = 1024 * 1024
"""Bytes of a session's budget a writer keeps for the session's end event."""


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB"


class TapeBudget:
    """Counts the decoded bytes of every session of one tape, against ``limit``."""

    def __init__(self, limit: int = MAX_TAPE_BYTES) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int, what: str) -> None:
        """Count ``size`` decoded bytes of ``what``; ``OverBudget`` past the limit."""
        if self.used + size > self.limit:
            raise OverBudget(
                f"the tape decodes past the {_mib(self.limit)} a command reads of one "
                f"tape ({self.used} bytes before this {size}-byte {what})"
            )
        self.used += size


class DecodeBudget:
    """Counts one session's decoded bytes; ``charge`` refuses what goes past a limit.

    With a ``tape`` budget, every charge counts against it too, and going past it
    raises ``OverBudget``: the tape as a whole is refused, not this session.
    """

    def __init__(
        self,
        *,
        event_limit: int = MAX_EVENT_BYTES,
        session_limit: int = MAX_SESSION_BYTES,
        tape: TapeBudget | None = None,
    ) -> None:
        self.event_limit = event_limit
        self.session_limit = session_limit
        self.tape = tape
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
        if self.tape is not None:
            self.tape.take(size, "event")
        self.used += size


def compress_bound(size: int) -> int:
    """Most bytes zstd may produce for ``size`` input bytes (its ZSTD_COMPRESSBOUND)."""
    margin = ((128 * 1024 - size) >> 11) if size < 128 * 1024 else 0
    return size + (size >> 8) + margin + 64
