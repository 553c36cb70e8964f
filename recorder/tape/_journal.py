"""A session's journal: its events on disk as they happen, until the whole session is.

A session encoded in memory (``SessionBuffer``) is lost with its process.  Its
journal is a small tape of its own that holds that one session: every event
is framed the moment it is taken and handed to the OS with one ``write``, so a
process killed at any point leaves the journal readable up to its last
complete event (``TapeReader`` returns the session as incomplete).  Once the
whole session is on its real tape the journal is deleted: the final session
supersedes it, and stays one session compressed in one go.

The journal compresses each event at zstd level 1 with a 128 KiB window: an
open journal holds under 1 MiB of zstd state, not the 7 MiB of a long-lived
``SessionWriter`` stream, and the exchanges it frames are already packed as
deltas of the previous request, so a small window loses little; the journal
is read only after a crash, and its session is compressed well on the tape.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import zstandard

from .._errors import TapeError
from .._version import WRITER
from ._frames import FLAG_END, file_header, frame_as

Sink = Callable[[int, bytes], None]
"""Takes each packed event of a session, with its frame flags, as it is taken."""

JOURNAL_SUFFIX = ".journal"
"""How a journal's name ends: ``<tape name>.<session id>.journal`` beside the tape."""

JOURNAL_LEVEL = 1
"""zstd level of a journal (read only after a crash, then superseded)."""

JOURNAL_WINDOW_LOG = 17
"""zstd window of a journal: 128 KiB."""


def journal_path(tape: Path, session_id: str) -> Path:
    """Where the journal of session ``session_id`` bound for ``tape`` lives."""
    return tape.with_name(f"{tape.name}.{session_id}{JOURNAL_SUFFIX}")


def journal_tape(journal: Path) -> tuple[Path, str] | None:
    """The tape a journal's session is bound for and the session's id; None when
    ``journal`` is not named as ``journal_path`` names one."""
    if not journal.name.endswith(JOURNAL_SUFFIX):
        return None
    stem = journal.name[: -len(JOURNAL_SUFFIX)]
    tape_name, dot, session_id = stem.rpartition(".")
    if not dot or not tape_name or len(session_id) != 16:
        return None
    try:
        bytes.fromhex(session_id)
    except ValueError:
        return None
    return journal.with_name(tape_name), session_id


class Journal:
    """Appends one session's packed events to its journal file as they come (a ``Sink``).

    Not thread-safe on its own: its one caller (a ``SessionBuffer``) frames
    events under its lock.  A failed write (disk full) ends the journal: later
    events are not written and ``problem`` says why; the session itself goes on.
    """

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.problem = ""
        """Why the journal stopped early ("" while it is whole)."""
        self._session = bytes.fromhex(session_id)
        params = zstandard.ZstdCompressionParameters.from_level(
            JOURNAL_LEVEL, window_log=JOURNAL_WINDOW_LOG
        )
        self._zstd: zstandard.ZstdCompressionObj | None = zstandard.ZstdCompressor(
            compression_params=params
        ).compressobj()
        self._seq = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as exc:
            raise TapeError(f"{path}: cannot open the journal: {exc.strerror}") from exc
        self._head = file_header(WRITER)

    def __call__(self, flags: int, raw: bytes) -> None:
        """Frame one packed event and write it (with the file header before the first)."""
        stream = self._zstd
        if stream is None:
            return
        end = bool(flags & FLAG_END)
        payload = stream.compress(raw) + stream.flush(
            zstandard.COMPRESSOBJ_FLUSH_FINISH if end else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        )
        data = self._head + frame_as(
            self._seq > 0, flags, self._session, self._seq, len(raw), payload
        )
        self._head = b""
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self.problem = f"{self.path}: cannot write: {exc.strerror}"
            self.close()
            return
        self._seq += 1
        if end:
            self.close()

    def close(self) -> None:
        """Stop journalling and close the file (kept on disk)."""
        if self._zstd is not None:
            self._zstd = None
            os.close(self._fd)


def discard_journal(tape: Path, session_id: str) -> None:
    """Delete the journal of a session now whole on ``tape`` (missing is fine)."""
    try:
        journal_path(tape, session_id).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise TapeError(f"{journal_path(tape, session_id)}: cannot delete: {exc.strerror}") from exc
