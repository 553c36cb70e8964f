"""The recording transport: the one seam where model traffic is captured.

httpx (and httpx2, its successor used by openai>=3 and anthropic>=2) routes
every request through a transport's ``handle_request`` /
``handle_async_request``.  ``RecordingTransport`` wraps the real transport:
requests go out unchanged, response bytes are handed to the caller the moment
they arrive, and a copy of each raw chunk (still content-encoded, with its time
offset) is kept.  When the response stream is finished, fails or is closed,
the exchange is redacted and appended to the session's tape.

The transport is not a subclass of either library's base class, so one
instance serves both: the flavor of each request (``httpx`` or ``httpx2``)
decides which response and stream classes are built.  This module and the
``_clients`` modules are the only places that touch the HTTP libraries.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import attrs

from ._events import (
    Chunk,
    Exchange,
    Headers,
    Request,
    Response,
    TransportError,
    with_assembled,
)
from ._volatile import kept_headers
from .apis import assemble
from .redact._delta import SessionRedactor
from .redact._redactor import Redactor, default_redactor
from .redact._scrub import Redacts
from .tape._writer import Appends

FLAVORS = ("httpx", "httpx2")
"""The HTTP libraries whose transports can be wrapped."""


@attrs.frozen(kw_only=True)
class Flavor:
    """One HTTP library's classes, looked up by name because their APIs mirror."""

    name: str
    """``"httpx"`` or ``"httpx2"``."""
    module: ModuleType
    """The imported library."""
    sync_stream: type[Any]
    """A sync byte-stream class of this library that iterates a wrapped iterable."""
    async_stream: type[Any]
    """An async byte-stream class of this library that iterates a wrapped iterable."""

    def response(self, status: int, headers: Headers, stream: Any, extensions: Any) -> Any:
        """A response object of this library."""
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        return self.module.Response(status, headers=raw, stream=stream, extensions=extensions)

    def error(self, type_name: str, message: str, request: Any) -> Exception:
        """The library's transport exception called ``type_name`` (or its base class)."""
        base = self.module.TransportError
        cls = getattr(self.module, type_name, None)
        if not (isinstance(cls, type) and issubclass(cls, base)):
            cls = base
        exc: Exception = cls(message, request=request)
        return exc


class _SyncIterStream:
    """Iterates a callable's iterator once; mixed into the flavor's SyncByteStream.

    A body is read once, as on a socket: a second read (the openai SDK drains a
    stream after use) yields nothing rather than the whole body again.
    """

    def __init__(self, chunks: Callable[[], Iterator[bytes]], on_close: Callable[[], None]) -> None:
        self._chunks = chunks
        self._on_close = on_close
        self._read = False

    def __iter__(self) -> Iterator[bytes]:
        if self._read:
            return iter(())
        self._read = True
        return self._chunks()

    def close(self) -> None:
        self._on_close()


class _AsyncIterStream:
    """Async twin of ``_SyncIterStream`` (read once, then empty)."""

    def __init__(
        self, chunks: Callable[[], AsyncIterator[bytes]], on_close: Callable[[], Any]
    ) -> None:
        self._chunks = chunks
        self._on_close = on_close
        self._read = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        if self._read:
            return _empty()
        self._read = True
        return self._chunks()

    async def aclose(self) -> None:
        await self._on_close()


async def _empty() -> AsyncIterator[bytes]:
    """An async iterator of nothing: a body already read."""
    return
    yield b""  # pragma: no cover  (makes this an async generator)


def load_flavor(name: str) -> Flavor:
    """The classes of the library ``name`` (``"httpx"`` or ``"httpx2"``)."""
    if name not in FLAVORS:
        raise ValueError(f"unknown HTTP flavor {name!r}; expected one of {', '.join(FLAVORS)}")
    module = importlib.import_module(name)
    return Flavor(
        name=name,
        module=module,
        sync_stream=type("SyncStream", (_SyncIterStream, module.SyncByteStream), {}),
        async_stream=type("AsyncStream", (_AsyncIterStream, module.AsyncByteStream), {}),
    )


class Flavors:
    """Per-owner cache of loaded flavors, keyed by the request's library."""

    def __init__(self) -> None:
        self._loaded: dict[str, Flavor] = {}
        self._lock = threading.Lock()

    def of(self, request: Any) -> Flavor:
        """The flavor of a request object (``httpx.Request`` or ``httpx2.Request``)."""
        name = type(request).__module__.partition(".")[0]
        with self._lock:
            flavor = self._loaded.get(name)
            if flavor is None:
                flavor = self._loaded[name] = load_flavor(name)
        return flavor


def raw_headers(headers: Any) -> Headers:
    """An httpx Headers object as lower-cased (name, value) pairs in wire order."""
    return tuple((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in headers.raw)


def request_record(request: Any, body: bytes) -> Request:
    """The ``Request`` event field for an httpx/httpx2 request."""
    return Request(
        method=request.method.upper(),
        url=str(request.url),
        headers=raw_headers(request.headers),
        body=body,
    )


class _Capture:
    """Collects one exchange as it happens and appends it exactly once."""

    def __init__(
        self, owner: RecordingTransport, request: Request, at: float, origin: float
    ) -> None:
        self._owner = owner
        self._request = request
        self._at = at
        self._origin = origin
        self._status = 0
        self._headers: Headers = ()
        self._streamed = False
        self._chunks: list[Chunk] = []
        self._bytes = 0
        self._error: TransportError | None = None
        self._done = False
        self._lock = threading.Lock()

    def respond(self, status: int, headers: Headers) -> None:
        self._status = status
        self._headers = headers
        content_type = next((v for k, v in headers if k == "content-type"), "")
        self._streamed = content_type.startswith("text/event-stream")

    def chunk(self, data: bytes) -> None:
        if data:
            self._chunks.append(Chunk(at=self._owner.clock() - self._origin, data=bytes(data)))
            self._bytes += len(data)

    def fail(self, exc: Exception) -> None:
        self._error = TransportError(
            type=type(exc).__name__,
            message=str(exc),
            after_chunks=len(self._chunks),
            after_bytes=self._bytes,
        )

    def abort(self, exc: Exception) -> None:
        """Record the exchange as failed with ``exc`` (the caller re-raises it)."""
        self.fail(exc)
        self.finish()

    def finish(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        response = None
        if self._status:
            response = Response(
                status=self._status,
                headers=kept_headers(self._status, self._headers),
                chunks=tuple(self._chunks),
                streamed=self._streamed,
            )
        exchange = Exchange(
            at=self._at,
            duration=self._owner.clock() - self._origin,
            request=self._request,
            response=response,
            error=self._error,
        )
        self._owner.record(exchange)


def assembled_exchange(exchange: Exchange) -> Exchange:
    """``exchange`` with its streamed response's message assembled (``Response.assembled``),
    read once now so that rescoring never parses the chunks again."""
    response = exchange.response
    assembled = assemble(exchange) if response is not None and response.streamed else None
    if assembled is None:
        return exchange
    assert response is not None
    return attrs.evolve(exchange, response=with_assembled(response, assembled))


def _relayed(module: Any, response: Any, stream: Any) -> Any:
    """The response handed to the client: the real one's status, headers and
    extensions, its body read through ``stream`` (which records it)."""
    return module.Response(
        response.status_code,
        headers=response.headers.raw,
        stream=stream,
        extensions=response.extensions,
    )


class RecordingTransport:
    """Wraps a real httpx or httpx2 transport and records every exchange.

    ``real`` is the transport that talks to the network (sync, async, or an
    object offering both).  Each exchange is passed through ``redactor``
    (default: ``recorder.redact.default_redactor()``) and appended to ``writer``
    when its response stream ends, fails or is closed, even if the caller
    stops reading early.  ``clock`` (default ``writer.now``) gives the
    seconds since the session started; chunk offsets are relative to the
    exchange's start.
    """

    def __init__(
        self,
        writer: Appends,
        real: Any,
        *,
        redactor: Redacts | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.writer = writer
        self.real = real
        self.redactor = redactor if redactor is not None else default_redactor()
        # A Redactor scans each request body by what changed since the recent ones.
        self._redacts: Redacts = (
            SessionRedactor(self.redactor) if isinstance(self.redactor, Redactor) else self.redactor
        )
        self.clock = clock or writer.now
        self._flavors = Flavors()
        self._sent_lock = threading.Lock()
        self._last_sent = -1

    def record(self, exchange: Exchange) -> None:
        """Redact ``exchange``, assemble its streamed message from the redacted chunks,
        and append it to the tape."""
        self.writer.append(assembled_exchange(self._redacts.redact_exchange(exchange)))

    def _begin(self, request: Any, body: bytes) -> _Capture:
        """Start an exchange.  Its ``at`` is strictly later than the one before, in whole
        microseconds: the order requests were sent is a fact of the tape, not of the
        clock's resolution, so a replay serves identical requests in that order."""
        origin = self.clock()
        with self._sent_lock:
            sent = max(round(origin * 1_000_000), self._last_sent + 1)
            self._last_sent = sent
        return _Capture(self, request_record(request, body), sent / 1_000_000, origin)

    def handle_request(self, request: Any) -> Any:
        """Send ``request`` through the real transport, recording the exchange."""
        capture = self._begin(request, request.read())
        try:
            response = self.real.handle_request(request)
        except Exception as exc:
            capture.abort(exc)
            raise
        capture.respond(response.status_code, raw_headers(response.headers))
        raw = response.stream

        def chunks() -> Iterator[bytes]:
            try:
                for data in raw:
                    capture.chunk(data)
                    yield data
            except Exception as exc:
                capture.abort(exc)
                raise
            capture.finish()

        def close() -> None:
            try:
                raw.close()
            finally:
                capture.finish()

        flavor = self._flavors.of(request)
        return _relayed(flavor.module, response, flavor.sync_stream(chunks, close))

    async def handle_async_request(self, request: Any) -> Any:
        """Async twin of ``handle_request``."""
        capture = self._begin(request, await request.aread())
        try:
            response = await self.real.handle_async_request(request)
        except Exception as exc:
            capture.abort(exc)
            raise
        capture.respond(response.status_code, raw_headers(response.headers))
        raw = response.stream

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for data in raw:
                    capture.chunk(data)
                    yield data
            except Exception as exc:
                capture.abort(exc)
                raise
            capture.finish()

        async def close() -> None:
            try:
                await raw.aclose()
            finally:
                capture.finish()

        flavor = self._flavors.of(request)
        return _relayed(flavor.module, response, flavor.async_stream(chunks, close))

    def close(self) -> None:
        """Close the real transport."""
        close = getattr(self.real, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        """Close the real (async) transport."""
        aclose = getattr(self.real, "aclose", None)
        if aclose is not None:
            await aclose()

    def __enter__(self) -> RecordingTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RecordingTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
