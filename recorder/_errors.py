"""The recorder's exceptions: one base class, translated at the CLI boundary."""

from __future__ import annotations


class TapeError(Exception):
    """Base class of every error about reading or writing tapes."""


class CorruptTape(TapeError):
    """A region of a tape file failed its checks.

    ``path`` and ``offset`` name the file and the byte where the bad frame
    starts, so the message can point a user at it.
    """

    def __init__(self, message: str, *, path: str = "", offset: int = -1) -> None:
        where = (
            f"{path}: byte {offset}: " if path and offset >= 0 else (f"{path}: " if path else "")
        )
        super().__init__(f"{where}{message}")
        self.path = path
        self.offset = offset


class OverBudget(TapeError):
    """Reading a tape would decode more bytes than the whole-tape budget its reader was given."""


class NewerFormat(TapeError):
    """The tape was written by a newer evaltape whose major format we cannot read."""


class NotATape(TapeError):
    """The file does not start with the tape magic."""


class RedactionError(TapeError):
    """A redaction rule is malformed (bad regular expression, empty kind)."""
