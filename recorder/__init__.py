"""evaltape.recorder: the event log.  Everything that produces and reads tapes."""

from ._clients import recording_client
from ._errors import CorruptTape, NewerFormat, NotATape, RedactionError, TapeError
from ._events import (
    Assembled,
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
    Scalar,
    SessionEnded,
    SessionStarted,
    Source,
    Status,
    TransportError,
    WorkspaceSnapshot,
)
from ._session import ROLE_HEADER, Failure, Session, ToolCallRecord, Turn, fold, role_of
from ._transport import Appends, Flavor, RecordingTransport
from ._version import VERSION
from .apis import Message, ModelCall, ToolCall, Usage, decode_call
from .redact._redactor import Redactor, default_redactor
from .redact._rules import SecretRule, secret_values
from .redact._scrub import Redacts, Scrubber, ScrubError, ScrubRule
from .tape._buffer import SessionBuffer, append_session
from .tape._journal import Journal, Sink, discard_journal, journal_path
from .tape._notes import Note
from .tape._reader import RecordedSession, SessionInfo, TapeReader, read_sessions
from .tape._writer import SessionWriter, new_session_id, open_session

__all__ = [
    "ROLE_HEADER",
    "VERSION",
    "Appends",
    "Assembled",
    "Chunk",
    "CorruptTape",
    "Event",
    "Exchange",
    "FactKind",
    "Failure",
    "FileEntry",
    "Flavor",
    "HarnessEvent",
    "Journal",
    "Message",
    "Mode",
    "ModelCall",
    "NewerFormat",
    "NotATape",
    "Note",
    "RecordedSession",
    "RecordingTransport",
    "RedactionError",
    "Redactor",
    "Redacts",
    "Request",
    "Response",
    "RunnerFact",
    "Scalar",
    "ScrubError",
    "ScrubRule",
    "Scrubber",
    "SecretRule",
    "Session",
    "SessionBuffer",
    "SessionEnded",
    "SessionInfo",
    "SessionStarted",
    "SessionWriter",
    "Sink",
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
    "append_session",
    "decode_call",
    "default_redactor",
    "discard_journal",
    "fold",
    "journal_path",
    "new_session_id",
    "open_session",
    "read_sessions",
    "recording_client",
    "role_of",
    "secret_values",
]
