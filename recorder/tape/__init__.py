"""The tape file: its frames, the stored form of events and exchanges, writing, reading,
journals.

Reading and writing tapes, session buffers, journals, notes on damaged tapes and the
format's errors are public here; ``evaltape.recorder`` re-exports the common ones.
"""

from .._errors import CorruptTape, NewerFormat, NotATape, TapeError
from ._buffer import SessionBuffer, append_session
from ._journal import Journal, Sink, discard_journal, journal_path
from ._notes import Note
from ._reader import RecordedSession, SessionInfo, TapeReader, read_sessions
from ._writer import Appends, SessionWriter, new_session_id, open_session

__all__ = [
    "Appends",
    "CorruptTape",
    "Journal",
    "NewerFormat",
    "NotATape",
    "Note",
    "RecordedSession",
    "SessionBuffer",
    "SessionInfo",
    "SessionWriter",
    "Sink",
    "TapeError",
    "TapeReader",
    "append_session",
    "discard_journal",
    "journal_path",
    "new_session_id",
    "open_session",
    "read_sessions",
]
