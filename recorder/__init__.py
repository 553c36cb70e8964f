"""evaltape.recorder: the event log.  Everything that produces and reads tapes."""

from recorder._adapters import Message, ModelCall, ToolCall, Usage, decode_call
from recorder._codec import SCHEMA_VERSION, from_plain, to_plain
from recorder._errors import CorruptTape, NewerFormat, NotATape, TapeError
from recorder._events import (
    Chunk,
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    Mode,
    Request,
    Response,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Source,
    Status,
    TransportError,
    WorkspaceSnapshot,
)
from recorder._reader import Note, RecordedSession, SessionInfo, TapeReader, read_sessions
from recorder._session import Failure, Session, ToolCallRecord, Turn, fold
from recorder._version import VERSION
from recorder._writer import SessionWriter, new_session_id, open_session

__all__ = [
    "SCHEMA_VERSION",
    "VERSION",
    "Chunk",
    "CorruptTape",
    "Event",
    "Exchange",
    "FactKind",
    "Failure",
    "FileEntry",
    "HarnessEvent",
    "Message",
    "Mode",
    "ModelCall",
    "NewerFormat",
    "NotATape",
    "Note",
    "RecordedSession",
    "Request",
    "Response",
    "RunnerFact",
    "Session",
    "SessionEnded",
    "SessionInfo",
    "SessionStarted",
    "SessionWriter",
    "Source",
    "Status",
    "TapeError",
    "TapeReader",
    "ToolCall",
    "ToolCallRecord",
    "TransportError",
    "Turn",
    "Usage",
    "WorkspaceSnapshot",
    "decode_call",
    "fold",
    "from_plain",
    "new_session_id",
    "open_session",
    "read_sessions",
    "to_plain",
]
