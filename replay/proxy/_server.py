"""A local HTTP proxy that records or replays any program's model traffic.

Agents written in other languages (or any program that honours
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``) cannot be handed an httpx
client, so they are pointed at ``TapeProxy`` on 127.0.0.1 instead.  Each
incoming request becomes an ``httpx.Request`` to the upstream API and goes
through the same transports a Python agent uses: a ``RecordingTransport``
wrapping a real one (live) or a ``ReplayTransport`` (replay).  The response
goes back chunk by chunk as it arrives, raw bytes with their content-encoding
unchanged, so the program decodes exactly what it would decode against the
real API.

What the program sees depends only on what the transport did, so a live run
and its replay look the same to it: an upstream transport failure becomes a
502 in both.  A replay miss becomes a 599 with ``x-should-retry: false`` and
is kept in ``TapeProxy.errors``.  A call the transport refused because the
run was stopped (``RunStopped``) becomes a 503 whose JSON error says so.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import httpx

from evaltape.recorder import Event, RecordedSession, RecordingTransport
from evaltape.recorder._shared import SDK_CONNECT_TIMEOUT, SDK_TIMEOUT, real_transport
from evaltape.recorder.redact import Redacts
from evaltape.recorder.tape import Appends

from .._errors import ReplayError
from .._transport import ReplayTransport
from ._errors import (
    BAD_REQUEST_STATUS,
    FORBIDDEN_STATUS,
    MISS_STATUS,
    PROXY_STATUS,
    STOPPED_STATUS,
    TOO_LARGE_STATUS,
    UPSTREAM_STATUS,
    RunStopped,
    error_body,
    miss_kind,
)
from ._forward import HOP_BY_HOP, NO_BODY, Upstreams
from ._limits import (
    BUSY,
    TOKEN_HEADER,
    BoundedServer,
    LimitedHandler,
    ProxyLimits,
    TooLarge,
    admitted,
    new_token,
    read_body,
    token_path,
)


class ProxyTransport(Protocol):
    """What the proxy needs from a transport (both evaltape transports fit)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send one request and return its (streaming) response."""


class _Aborted(Exception):
    """The response broke after its head was sent; the connection must be dropped."""


class TapeProxy:
    """A threaded HTTP/1.1 server on 127.0.0.1 feeding one transport.

    ``transport`` is a ``RecordingTransport`` around a real httpx transport
    (see ``recording``) or a ``ReplayTransport`` (see ``replaying``).
    ``upstreams`` maps requests to the real APIs' base URLs; in replay only
    the path matters.  ``port`` 0 (default) picks a free one.  Use as a
    context manager or call ``start()`` / ``stop()``; ``url`` is the proxy's
    address and ``env()`` the variables to start the program with.

    ``errors`` lists every replay miss served as a 599 and every internal
    failure served as a 500, in order; ``upstream_failures`` every transport
    failure served as a 502 (``"ConnectError: ..."``).

    Only requests presenting ``token`` (default: a fresh random one) are
    served; ``url`` and ``env()`` carry it.  ``limits`` bound request size,
    read time and connections (see ``ProxyLimits``).  ``listen``, a socket
    already bound and listening (one made inside a network namespace), is
    served instead of a new one on 127.0.0.1.
    """

    def __init__(
        self,
        transport: ProxyTransport,
        *,
        upstreams: Upstreams | None = None,
        port: int = 0,
        timeout: float = SDK_TIMEOUT,
        connect_timeout: float = SDK_CONNECT_TIMEOUT,
        token: str | None = None,
        limits: ProxyLimits | None = None,
        listen: socket.socket | None = None,
    ) -> None:
        self.transport = transport
        self.token = token if token else new_token()
        self.limits = limits if limits is not None else ProxyLimits()
        self.listen = listen
        self.upstreams = upstreams if upstreams is not None else Upstreams()
        self.port = port
        self.timeouts = httpx.Timeout(timeout, connect=connect_timeout).as_dict()
        self.errors: list[Exception] = []
        self.upstream_failures: list[str] = []
        self._lock = threading.Lock()
        self._server: BoundedServer | None = None
        self._thread: threading.Thread | None = None
        self._open: set[socket.socket] = set()

    @classmethod
    def recording(
        cls,
        writer: Appends,
        *,
        upstreams: Upstreams | None = None,
        redactor: Redacts | None = None,
        port: int = 0,
    ) -> TapeProxy:
        """A proxy forwarding to the real APIs and recording into ``writer``."""
        real = real_transport("httpx", async_=False)
        transport = RecordingTransport(writer, real, redactor=redactor)
        return cls(transport, upstreams=upstreams, port=port)

    @classmethod
    def replaying(
        cls,
        recording: RecordedSession | Sequence[Event] | ReplayTransport,
        *,
        port: int = 0,
        **options: Any,
    ) -> TapeProxy:
        """A proxy answering from a recorded session; ``options`` go to ``ReplayTransport``."""
        if isinstance(recording, ReplayTransport):
            transport = recording
        else:
            transport = ReplayTransport(recording, **options)
        return cls(transport, port=port)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/evaltape-<token>``: the base every request goes
        under; valid once started."""
        if self._server is None:
            raise RuntimeError("the proxy is not running; call start() first")
        return f"http://127.0.0.1:{self.port}{token_path(self.token)}"

    @property
    def replaying_tape(self) -> bool:
        """True when the transport serves a tape (so API keys are not needed)."""
        return isinstance(self.transport, ReplayTransport)

    def env(self) -> dict[str, str]:
        """Environment variables that point a program's SDKs at this proxy.

        ``OPENAI_BASE_URL`` (``<url>/v1``) and ``ANTHROPIC_BASE_URL``
        (``<url>``); when replaying, placeholder ``OPENAI_API_KEY`` and
        ``ANTHROPIC_API_KEY`` too, since SDKs refuse to start without a key
        and a tape needs none.
        """
        out = {"OPENAI_BASE_URL": self.url + "/v1", "ANTHROPIC_BASE_URL": self.url}
        if self.replaying_tape:
            out |= {"OPENAI_API_KEY": "evaltape-replay", "ANTHROPIC_API_KEY": "evaltape-replay"}
        return out

    # -- serving -------------------------------------------------------------

    def start(self) -> TapeProxy:
        """Start serving in a background thread."""
        if self._server is not None:
            return self
        bind = self.listen is None
        server = BoundedServer(
            ("127.0.0.1", self.port),
            _handler_for(self),
            self.limits.max_connections,
            bind_and_activate=bind,
            max_pending=self.limits.max_pending,
        )
        if self.listen is not None:
            server.socket.close()
            server.socket = self.listen
            server.server_address = self.listen.getsockname()
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"evaltape-proxy-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and free the port."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._open.clear()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TapeProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, conn: socket.socket, opened: bool) -> None:
        with self._lock:
            if opened:
                self._open.add(conn)
            else:
                self._open.discard(conn)

    def _note(self, exc: Exception) -> None:
        with self._lock:
            self.errors.append(exc)

    def _note_upstream(self, message: str) -> None:
        with self._lock:
            self.upstream_failures.append(message)

    def build_request(
        self, method: str, target: str, headers: Sequence[tuple[str, str]], body: bytes
    ) -> httpx.Request:
        """The upstream request for one incoming request.

        Hop-by-hop headers are dropped and values lose surrounding whitespace,
        which HTTP does not count as part of a value.
        """
        kept = [(k, v.strip()) for k, v in headers if k.lower() not in HOP_BY_HOP]
        lower = {k.lower(): v for k, v in kept}
        return httpx.Request(
            method,
            self.upstreams.url_for(target, lower),
            headers=kept,
            content=body,
            extensions={"timeout": self.timeouts},
        )


def _handler_for(proxy: TapeProxy) -> type[LimitedHandler]:
    class Handler(_Handler):
        owner = proxy
        limits = proxy.limits

    return Handler


class _Handler(LimitedHandler):
    """Turns one HTTP request into a transport call and streams the answer back."""

    protocol_version = "HTTP/1.1"
    owner: TapeProxy

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tape is the log."""

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, True)

    def finish(self) -> None:
        self.owner._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._relay()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _relay(self) -> None:
        proxy = self.owner
        target = admitted(self.path, self.headers.get(TOKEN_HEADER), proxy.token)
        if target is None:  # another local user, or a stray program: never recorded
            self.close_connection = True
            self._error(FORBIDDEN_STATUS, "evaltape_forbidden", "missing or wrong proxy token")
            return
        server = self.server
        if isinstance(server, BoundedServer) and not server.admit(self.connection):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.wfile.write(BUSY)
            return
        try:
            body = read_body(
                self.rfile,
                self.headers.get("transfer-encoding", ""),
                self.headers.get("content-length"),
                proxy.limits.max_body,
            )
            request = proxy.build_request(self.command, target, list(self.headers.items()), body)
        except TooLarge as exc:
            self.close_connection = True
            self._error(TOO_LARGE_STATUS, "evaltape_request_too_large", str(exc))
            return
        except (ValueError, httpx.InvalidURL) as exc:
            self.close_connection = True
            self._error(BAD_REQUEST_STATUS, "evaltape_bad_request", f"unreadable request: {exc}")
            return
        try:
            response = proxy.transport.handle_request(request)
        except ReplayError as exc:
            proxy._note(exc)
            self._error(MISS_STATUS, miss_kind(exc), str(exc))
            return
        except RunStopped as exc:  # recorded below as a refused call; nothing was sent
            self._error(STOPPED_STATUS, "evaltape_run_stopped", str(exc))
            return
        except httpx.TransportError as exc:
            message = f"{type(exc).__name__}: {exc}"
            proxy._note_upstream(message)
            self._error(UPSTREAM_STATUS, "evaltape_upstream_error", f"upstream failed: {message}")
            return
        except Exception as exc:
            proxy._note(exc)
            self._error(PROXY_STATUS, "evaltape_proxy_error", f"{type(exc).__name__}: {exc}")
            return
        try:
            self._forward(response)
        except Exception as exc:
            if not isinstance(exc, _Aborted):
                proxy._note(exc)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            response.close()

    def _error(self, status: int, kind: str, message: str) -> None:
        data = error_body(kind, message)
        self.send_response(status, "evaltape" if status == MISS_STATUS else None)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)

    def _forward(self, response: httpx.Response) -> None:
        """Write the head, then every raw chunk the moment it arrives."""
        status = response.status_code
        self.send_response_only(status, response.reason_phrase or None)
        for name, value in response.headers.multi_items():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        bodyless = status in NO_BODY or status < 200 or self.command == "HEAD"
        chunked = not bodyless and self.request_version == "HTTP/1.1"
        if chunked:
            self.send_header("transfer-encoding", "chunked")
        elif not bodyless:
            self.close_connection = True
            self.send_header("connection", "close")
        self.end_headers()
        if bodyless:
            return
        for data in _raw_chunks(response):
            if data:
                self._write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
        if chunked:
            self._write(b"0\r\n\r\n")

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
        except OSError as exc:
            raise _Aborted("the program closed the connection") from exc


def _raw_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The response's raw bytes as they arrive; a failure mid-body aborts.

    A response made in memory (the proxy's own refusals) was read when it was built,
    so its bytes are sent as they are."""
    if response.is_stream_consumed:
        yield response.content
        return
    try:
        yield from response.iter_raw()
    except (httpx.TransportError, ReplayError) as exc:
        raise _Aborted(str(exc)) from exc
