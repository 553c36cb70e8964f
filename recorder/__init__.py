"""evaltape.recorder: the event log.  Everything that produces and reads tapes.

The root holds the facts a tape records, the Session view derived from them,
reading tapes and recording.  Writing sessions, journals and the format's errors
are in ``evaltape.recorder.tape``; redaction and scrubbing in
``evaltape.recorder.redact``; the scripted provider in ``evaltape.recorder.script``.
"""

from ._clients import recording_client
from ._errors import TapeError
from ._events import (
    Assembled,
    Chunk,
    ChunkSource,
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    LazyBody,
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
from ._session import (
    ROLE_HEADER,
    Failure,
    Session,
    ToolCallRecord,
    ToolResult,
    Turn,
    fold,
    role_of,
)
from ._transport import Flavor, RecordingTransport
from ._version import VERSION
from .apis import Message, ModelCall, RequestSide, ToolCall, Usage, decode_call
from .tape._reader import RecordedSession, TapeReader, read_sessions
from .tape._writer import open_session

__all__ = [
    "ROLE_HEADER",
    "VERSION",
    "Assembled",
    "Chunk",
    "ChunkSource",
    "Event",
    "Exchange",
    "FactKind",
    "Failure",
    "FileEntry",
    "Flavor",
    "HarnessEvent",
    "LazyBody",
    "Message",
    "Mode",
    "ModelCall",
    "RecordedSession",
    "RecordingTransport",
    "Request",
    "RequestSide",
    "Response",
    "RunnerFact",
    "Scalar",
    "Session",
    "SessionEnded",
    "SessionStarted",
    "Source",
    "Status",
    "TapeError",
    "TapeReader",
    "ToolCall",
    "ToolCallRecord",
    "ToolResult",
    "TransportError",
    "Turn",
    "Usage",
    "WorkspaceSnapshot",
    "decode_call",
    "fold",
    "open_session",
    "read_sessions",
    "recording_client",
    "role_of",
]
