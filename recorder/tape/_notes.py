"""What a reader notices about a tape (cut short, corrupt, skipped), and where it goes."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from .._errors import CorruptTape


@attrs.frozen(kw_only=True)
class Note:
    """Something a reader noticed: the file was cut short, a region is corrupt..."""

    kind: str
    """"truncated", "corrupt", "skipped" or "incomplete"."""
    message: str
    """One line naming the file and byte offset."""
    offset: int
    """Byte offset the note is about."""
    session_id: str = ""
    """The session concerned, when known."""


class NoteLog:
    """The notes of one read of one file, kept in ``notes`` and passed to ``on_note``.

    ``strict``: corruption raises ``CorruptTape`` instead of being noted.
    """

    def __init__(
        self, path: str, *, strict: bool, on_note: Callable[[Note], None] | None = None
    ) -> None:
        self.path = path
        self.strict = strict
        self.notes: list[Note] = []
        self._on_note = on_note

    def note(self, kind: str, message: str, offset: int, session_id: str = "") -> None:
        """Keep a note about the byte at ``offset`` and pass it on."""
        note = Note(
            kind=kind,
            message=f"{self.path}: byte {offset}: {message}",
            offset=offset,
            session_id=session_id,
        )
        self.notes.append(note)
        if self._on_note is not None:
            self._on_note(note)

    def corrupt(self, message: str, offset: int, session_id: str = "") -> None:
        """A corrupt region: raise ``CorruptTape`` when strict, else note it."""
        if self.strict:
            raise CorruptTape(message, path=self.path, offset=offset)
        self.note("corrupt", message, offset, session_id)
