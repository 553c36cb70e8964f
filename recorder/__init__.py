"""evaltape.recorder: the event log.  Everything that produces and reads tapes."""

from evaltape.recorder._adapters import Message, ModelCall, ToolCall, Usage, decode_call
from evaltape.recorder._clients import recording_client
from evaltape.recorder._codec import SCHEMA_VERSION, from_plain, to_plain
from evaltape.recorder._errors import CorruptTape, NewerFormat, NotATape, RedactionError, TapeError
from evaltape.recorder._events import (
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
from evaltape.recorder._reader import RecordedSession, SessionInfo, TapeReader, read_sessions
from evaltape.recorder._redact import Redactor, default_redactor
from evaltape.recorder._script import (
    SCRIPT_MATCH_ANY,
    SCRIPT_MATCH_HEADER,
    Script,
    ScriptError,
    ScriptFlavor,
    load_script,
    parse_script,
)
from evaltape.recorder._script_tape import script_exchanges, write_script_tape
from evaltape.recorder._secret_rules import SecretRule
from evaltape.recorder._session import (
    ROLE_HEADER,
    Failure,
    Session,
    ToolCallRecord,
    Turn,
    fold,
    role_of,
)
from evaltape.recorder._tape_notes import Note
from evaltape.recorder._transport import RecordingTransport
from evaltape.recorder._version import VERSION
from evaltape.recorder._writer import SessionWriter, new_session_id, open_session

__all__ = [
    "ROLE_HEADER",
    "SCHEMA_VERSION",
    "SCRIPT_MATCH_ANY",
    "SCRIPT_MATCH_HEADER",
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
    "RecordingTransport",
    "RedactionError",
    "Redactor",
    "Request",
    "Response",
    "RunnerFact",
    "Script",
    "ScriptError",
    "ScriptFlavor",
    "SecretRule",
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
    "default_redactor",
    "fold",
    "from_plain",
    "load_script",
    "new_session_id",
    "open_session",
    "parse_script",
    "read_sessions",
    "recording_client",
    "role_of",
    "script_exchanges",
    "to_plain",
    "write_script_tape",
]
