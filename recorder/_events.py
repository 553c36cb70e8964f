"""The facts a tape records, as immutable values.

Every event is a frozen attrs class with tuple fields and a ``kind`` tag.
Events hold facts only; traces, usage totals, costs and scores are folds over
them (see ``_session.py``), so a better fold re-derives them from old tapes.

Times are seconds relative to the session's start (``at``), except the start
itself, which carries the wall-clock epoch.  Clocks are never read here: the
caller passes every time in.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Protocol, TypeAlias

import attrs
import msgspec

Scalar: TypeAlias = str | int | float | bool | None
Headers: TypeAlias = tuple[tuple[str, str], ...]


class Mode(enum.Enum):
    """Why a session was run."""

    LIVE = "live"
    """Real attempt against a model API; the responses are new facts."""
    REPLAY = "replay"
    """The harness re-ran on recorded model responses."""
    SCRIPT = "script"
    """Responses came from a hand-written script (harness unit tests)."""


class Source(enum.Enum):
    """Where the model responses of a session came from."""

    REAL_API = "real_api"
    """A hosted model API (OpenAI, Anthropic, ...)."""
    LOCAL_SERVER = "local_server"
    """A real model served on this machine (e.g. llama.cpp)."""
    SIMULATED = "simulated"
    """A program that imitates a model API (a test server)."""
    SCRIPT = "script"
    """A hand-written script of responses."""


class Status(enum.Enum):
    """How a session ended."""

    COMPLETED = "completed"
    """The agent finished on its own."""
    FAILED = "failed"
    """The agent or a model call raised an error."""
    TIMEOUT = "timeout"
    """The runner stopped the attempt at its time limit."""
    INTERRUPTED = "interrupted"
    """The user interrupted the run (Ctrl-C)."""
    INFRA_ERROR = "infra_error"
    """Something outside the agent failed (provider 5xx, crash)."""


class FactKind(enum.Enum):
    """What a runner fact reports."""

    TIMEOUT = "timeout"
    """An attempt or a model call passed its time limit."""
    INFRA_ERROR = "infra_error"
    """A provider or sandbox failure outside the agent's control."""
    INTERRUPT = "interrupt"
    """The run was interrupted."""
    NOTE = "note"
    """Anything else the runner wants on the record."""


@attrs.frozen(kw_only=True)
class SessionStarted:
    """The header of a session: what ran, where responses came from, when."""

    kind: ClassVar[str] = "session_started"

    session_id: str
    """Unique id of the session (random hex); frames of the file carry it."""
    started_at: float
    """Wall-clock start, seconds since the Unix epoch."""
    case_id: str = ""
    """Id of the eval case this attempt ran, empty outside a suite."""
    attempt: int = 0
    """Zero-based attempt (trial) index of the case."""
    model: str = ""
    """Model requested by the runner."""
    mode: Mode = Mode.LIVE
    """Why the session ran."""
    source: Source = Source.REAL_API
    """Where the model responses came from."""
    source_detail: str = ""
    """Free text naming the server and model, e.g. "llama.cpp SmolLM2-135M"."""
    harness_commit: str = ""
    """Commit of the agent harness, if known."""
    harness_version: str = ""
    """Version string of the agent harness, if known."""
    seed: int | None = None
    """Sampling seed passed to the model, if any."""
    replay_of: str = ""
    """For replays: session id of the recorded session served."""
    metadata: tuple[tuple[str, Scalar], ...] = ()
    """Small free-form key/value facts (suite, run id, ...)."""


@attrs.frozen(kw_only=True)
class SessionEnded:
    """The last event of a session."""

    kind: ClassVar[str] = "session_ended"

    at: float
    """Seconds since the session started."""
    status: Status
    """How the session ended."""
    reason: str = ""
    """One line saying why, for anything but a plain completion."""


def _microseconds(at: float) -> float:
    """Round a time to whole microseconds, the precision a tape keeps (-0.0 as 0.0)."""
    return round(float(at), 6) + 0.0


def _milliseconds(at: float) -> float:
    """Round a chunk time to whole milliseconds, the precision a tape keeps for them
    (-0.0 as 0.0): ``n / 1000`` for the nearest whole ``n``, as a reader rebuilds it."""
    return round(float(at) * 1000) / 1000 + 0.0


class Chunk(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Bytes of a response body as they arrived.

    A frozen ``msgspec`` struct (a stream has dozens a turn, and a replay builds each
    one it serves): equal, hashable and immutable as the attrs events are;
    ``msgspec.structs.replace`` makes a changed copy."""

    at: float
    """Seconds since the exchange started, rounded to whole milliseconds (pacing a
    replay needs no finer times, and finer ones cost a tenth of a streamed tape)."""
    data: bytes
    """Raw bytes, still content-encoded as sent on the wire."""

    def __post_init__(self) -> None:
        # The rounding a constructor (or ``replace``) gives ``at``, as an attrs
        # converter would (msgspec's documented way to set a field of a frozen struct).
        msgspec.structs.force_setattr(self, "at", _milliseconds(self.at))


@attrs.frozen(kw_only=True)
class Assembled:
    """What a streamed response says once its events are put together, as the recorder's
    adapters read it when the response was recorded: kept beside the chunks so that
    rescoring reads this instead of parsing every chunk again.  Derived, never a fact:
    ``version`` names the adapters that made it, and a reader whose adapters read
    streams differently (another ``ASSEMBLY`` in ``recorder.apis``) parses the chunks."""

    version: int
    """The adapters' ``ASSEMBLY`` version when it was made."""
    model: str = ""
    """The model the response names."""
    response_id: str = ""
    """The response's id."""
    output_text: str = ""
    """The text the model produced."""
    thinking: str = ""
    """Reasoning or thinking text the response exposed."""
    finish_reason: str = ""
    """Why generation stopped, as the API says it."""
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    """``(id, name, arguments)`` of each tool call, in output order."""
    usage: tuple[int, int, int, int, int, float | None] | None = None
    """Input, output, cache-read, cache-write and reasoning tokens and the reported cost;
    None when the response reported no usage."""
    error: str = ""
    """What the adapters found wrong with the stream (cut short, an error event)."""


class LazyBody(Protocol):
    """A request body a reader has not built yet (a body stored as a delta,
    ``tape._delta.DeltaBody``): built when first asked for, then kept; it pickles
    as its bytes."""

    def built(self) -> bytes:
        """The body's bytes."""
        ...


class ChunkSource(Protocol):
    """A response's chunks held as something other than a tuple: as a tape stores
    them (``tape._chunks.StoredChunks``, built when first asked for), or with the
    message the recorder assembled from them (``with_assembled``).  Either pickles
    as what it holds."""

    @property
    def assembled(self) -> Assembled | None:
        """The message assembled from these very chunks, None if none was."""
        ...

    def body(self) -> bytes:
        """The chunks' bytes, joined."""
        ...

    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks."""
        ...


def _body_of(source: bytes | LazyBody) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, bytearray | memoryview):  # (not what the type says, but kept)
        return bytes(source)
    return source.built()


def _chunks_of(source: tuple[Chunk, ...] | ChunkSource) -> tuple[Chunk, ...]:
    if isinstance(source, tuple):
        return source
    if isinstance(source, list):  # (not what the type says, but kept)
        return tuple(source)
    return source.chunks()


@attrs.frozen(kw_only=True)
class Request:
    """An HTTP request as sent, secrets already redacted."""

    method: str
    """HTTP method, upper case."""
    url: str
    """Full URL."""
    headers: Headers = ()
    """Headers in wire order, names lower-cased."""
    _body: bytes | LazyBody = attrs.field(default=b"", alias="body", eq=_body_of)
    """What ``body`` is: its bytes, or (read from a tape) the delta that builds them
    when first asked for.  Compared, hashed and pickled as the bytes."""

    @property
    def body(self) -> bytes:
        """Body bytes exactly as sent."""
        return _body_of(self._body)

    def __repr__(self) -> str:
        return (
            f"Request(method={self.method!r}, url={self.url!r}, "
            f"headers={self.headers!r}, body={self.body!r})"
        )


def body_source(request: Request) -> LazyBody | None:
    """What builds ``request.body``, for a body a tape stores as a delta (a reader
    that knows what changed reads the delta without building the body), built yet
    or not; None for a body held as bytes."""
    source = request._body
    return None if isinstance(source, bytes | bytearray | memoryview) else source


class _Assembled:
    """Chunks with the message the recorder assembled from them (``with_assembled``)."""

    __slots__ = ("_chunks", "assembled")

    def __init__(self, chunks: tuple[Chunk, ...], assembled: Assembled) -> None:
        self._chunks = chunks
        self.assembled: Assembled | None = assembled

    def body(self) -> bytes:
        return b"".join(c.data for c in self._chunks)

    def chunks(self) -> tuple[Chunk, ...]:
        return self._chunks


def with_message(chunks: tuple[Chunk, ...], assembled: Assembled) -> ChunkSource:
    """``chunks`` holding the message the recorder assembled from them."""
    return _Assembled(chunks, assembled)


@attrs.frozen(kw_only=True)
class Response:
    """An HTTP response as received."""

    status: int
    """Status code."""
    headers: Headers = ()
    """Headers in wire order, names lower-cased."""
    _chunks: tuple[Chunk, ...] | ChunkSource = attrs.field(
        default=(), alias="chunks", eq=_chunks_of
    )
    """What ``chunks`` are: a tuple, or a ``ChunkSource`` (as a tape stores them, or with
    their assembled message).  Compared and hashed as the tuple of chunks."""
    streamed: bool = False
    """True when the caller consumed the body as a stream."""

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """Body as received: one chunk for a plain body, many for a stream."""
        return _chunks_of(self._chunks)

    @property
    def body(self) -> bytes:
        """The whole raw body (joined chunks)."""
        source = self._chunks
        if isinstance(source, tuple | list):
            return b"".join(c.data for c in source)
        return source.body()

    @property
    def assembled(self) -> Assembled | None:
        """A streamed response's message as the recorder assembled it from these chunks
        (``with_assembled``); None when it was not.  It lives with the chunks it was
        made from: a copy given other chunks (``attrs.evolve``) holds none, so it can
        never carry the message of these."""
        source = self._chunks
        return None if isinstance(source, tuple | list) else source.assembled

    def __repr__(self) -> str:
        return (
            f"Response(status={self.status!r}, headers={self.headers!r}, "
            f"chunks={self.chunks!r}, streamed={self.streamed!r})"
        )


def with_assembled(response: Response, assembled: Assembled | None) -> Response:
    """A copy of ``response`` holding ``assembled``, the message its chunks make (the
    recorder's adapters say so, ``recorder.apis.assemble``), or holding none."""
    chunks = response.chunks
    if assembled is None:
        return attrs.evolve(response, chunks=chunks)
    return attrs.evolve(response, chunks=with_message(chunks, assembled))


@attrs.frozen(kw_only=True)
class TransportError:
    """A failure on the wire: connect error, timeout, disconnect mid-stream."""

    type: str
    """Exception class name, e.g. "ReadTimeout"."""
    message: str
    """The exception's message."""
    after_chunks: int = 0
    """How many response chunks had arrived before the failure."""
    after_bytes: int = 0
    """How many response body bytes had arrived before the failure."""


@attrs.frozen(kw_only=True)
class Exchange:
    """One HTTP exchange with a model API."""

    kind: ClassVar[str] = "exchange"

    at: float = attrs.field(converter=_microseconds)
    """Seconds since the session started, when the request was sent, rounded to whole
    microseconds."""
    duration: float = attrs.field(converter=_microseconds)
    """Seconds from sending the request to the end of the response, rounded to whole
    microseconds."""
    request: Request
    """The request."""
    response: Response | None = None
    """The response, if any status line arrived."""
    error: TransportError | None = None
    """The failure, if the exchange did not complete."""


@attrs.frozen(kw_only=True)
class HarnessEvent:
    """Something the agent chose to log (tool timing, permission answers)."""

    kind: ClassVar[str] = "harness"

    at: float
    """Seconds since the session started."""
    name: str
    """Short event name, e.g. "tool" or "permission"."""
    fields: tuple[tuple[str, Scalar], ...] = ()
    """Small key/value payload."""


@attrs.frozen(kw_only=True)
class RunnerFact:
    """Something the runner observed about the attempt."""

    kind: ClassVar[str] = "runner"

    at: float
    """Seconds since the session started."""
    fact: FactKind
    """What kind of fact."""
    message: str = ""
    """One line of detail."""


@attrs.frozen(kw_only=True)
class FileEntry:
    """One file of a workspace snapshot."""

    path: str
    """Path relative to the workspace root, with forward slashes."""
    data: bytes
    """File content."""
    mode: int = 0o644
    """Permission bits."""


@attrs.frozen(kw_only=True)
class WorkspaceSnapshot:
    """The sandbox's final files, so outcome checks can be rescored offline."""

    kind: ClassVar[str] = "workspace"

    at: float
    """Seconds since the session started."""
    files: tuple[FileEntry, ...] = ()
    """Files kept, sorted by path."""
    omitted: tuple[str, ...] = ()
    """Paths left out (too large, or over the snapshot's budget)."""
    redacted: tuple[str, ...] = ()
    """Paths of files whose content had secrets masked before recording (same
    length, see docs/redaction.md): checks of these run on redacted content."""


Event: TypeAlias = (
    SessionStarted | SessionEnded | Exchange | HarnessEvent | RunnerFact | WorkspaceSnapshot
)
