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
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeAlias

import attrs

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


@attrs.frozen(kw_only=True)
class Chunk:
    """Bytes of a response body as they arrived."""

    at: float = attrs.field(converter=_milliseconds)
    """Seconds since the exchange started, rounded to whole milliseconds (pacing a
    replay needs no finer times, and finer ones cost a tenth of a streamed tape)."""
    data: bytes
    """Raw bytes, still content-encoded as sent on the wire."""


def _built_once(
    event: object, name: str, field: str, pending: str, build: Callable[[Any], object]
) -> object:
    """``__getattr__`` of an event whose ``field`` a reader left unset: ``build`` it from
    the ``pending`` slot the first time it is read, then clear that slot (reading every
    field, as equality and pickling do, reads ``field`` first: it comes before)."""
    if name != field:
        raise AttributeError(name)
    source = object.__getattribute__(event, pending)
    if source is None:  # built by another thread since, or never given
        return object.__getattribute__(event, field)
    value = build(source)
    object.__setattr__(event, field, value)
    object.__setattr__(event, pending, None)
    return value


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
    """A body built when first asked for."""

    def built(self) -> bytes:
        """The body's bytes."""
        ...


class PackedChunks(Protocol):
    """A response's chunks as a tape stores them, built when first asked for."""

    def body(self) -> bytes:
        """The chunks' bytes, joined."""
        ...

    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks."""
        ...


@attrs.frozen(kw_only=True)
class Request:
    """An HTTP request as sent, secrets already redacted."""

    method: str
    """HTTP method, upper case."""
    url: str
    """Full URL."""
    headers: Headers = ()
    """Headers in wire order, names lower-cased."""
    body: bytes = b""
    """Body bytes exactly as sent."""
    _lazy: LazyBody | None = attrs.field(default=None, init=False, eq=False, hash=False, repr=False)
    """For a request read from a tape before its body was asked for: what builds it
    (a body stored as a delta, ``_delta.DeltaBody``); None once built.  Last, so
    whatever reads every field reads ``body`` first."""

    def __getattr__(self, name: str) -> object:
        # Only reached when a slot is unset: ``body`` of a tape-read request.
        return _built_once(self, name, "body", "_lazy", lambda lazy: lazy.built())


def unbuilt_body(request: Request) -> LazyBody | None:
    """What builds ``request.body`` if nothing has asked for it yet, else None."""
    try:
        lazy: LazyBody | None = object.__getattribute__(request, "_lazy")
    except AttributeError:  # (unpickled from a version without the slot)
        return None
    return lazy


@attrs.frozen(kw_only=True)
class Response:
    """An HTTP response as received."""

    status: int
    """Status code."""
    headers: Headers = ()
    """Headers in wire order, names lower-cased."""
    chunks: tuple[Chunk, ...] = ()
    """Body as received: one chunk for a plain body, many for a stream."""
    streamed: bool = False
    """True when the caller consumed the body as a stream."""
    assembled: Assembled | None = attrs.field(default=None, init=False, eq=False, hash=False)
    """A streamed response's message as the recorder assembled it from these chunks
    (``with_assembled``); None when it was not.  Derived from the chunks, so not part of
    equality, and not an argument: a copy (``attrs.evolve``) holds none, so a copy with
    other chunks can never carry the message of these."""
    _packed: PackedChunks | None = attrs.field(
        default=None, init=False, eq=False, hash=False, repr=False
    )
    """For a response read from a tape before its chunks were asked for: its stored chunks
    (``tape._chunks.StoredChunks``), which give the joined body and build the chunks;
    None once they exist."""

    def __getattr__(self, name: str) -> object:
        # Only reached when a slot is unset: ``chunks`` of a tape-read response.
        return _built_once(self, name, "chunks", "_packed", lambda packed: packed.chunks())

    @property
    def body(self) -> bytes:
        """The whole raw body (joined chunks)."""
        packed = self._packed
        if packed is not None:
            return packed.body()
        return b"".join(c.data for c in self.chunks)


def with_assembled(response: Response, assembled: Assembled | None) -> Response:
    """A copy of ``response`` holding ``assembled``, the message its chunks make (the
    recorder's adapters say so, ``recorder.apis.assemble``; a reader, that the tape does)."""
    copy = attrs.evolve(response)
    object.__setattr__(copy, "assembled", assembled)  # (not an argument, see the field)
    return copy


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
