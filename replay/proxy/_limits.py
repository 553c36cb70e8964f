"""What a ``TapeProxy`` accepts: its run's token, bounded requests, bounded time and threads.

The proxy listens on 127.0.0.1, where every local user can connect, so a
request must present the proxy's random token: as the first segment of its
path (the base URLs ``TapeProxy.env()`` hands a program carry it) or in the
``x-evaltape-token`` header.  Without it the answer is 403 and nothing is
recorded.  A request body past ``max_body`` is refused with 413 before it is
read (a ``Content-Length`` of 50 GB allocates nothing); a client that sends
nothing for ``read_timeout`` seconds, or takes longer than
``request_timeout`` for one request's head and body, is dropped; at most
``max_connections`` connections that presented the token are served at once,
further ones get 503 at once.  A connection holds one of those slots only once
its first request's head carried the token: until then it is *pending*, a wrong
token closes it after that head, and when more than ``max_pending`` are pending
the oldest is closed, so connections that never authenticate (idle, dripping,
or another local user's) cannot take the slots of the program's own requests.
"""

from __future__ import annotations

import contextlib
import hmac
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

import attrs

TOKEN_HEADER = "x-evaltape-token"
"""Request header that may carry the token instead of the path."""

TOKEN_PREFIX = "evaltape-"
"""The token's path segment is ``/evaltape-<token>``."""


@attrs.frozen(kw_only=True)
class ProxyLimits:
    """Bounds on what one client can make the proxy hold."""

    max_body: int = 64 * 1024 * 1024
    """Most bytes of a request body (413 past it)."""
    read_timeout: float = 30.0
    """Seconds a client may send nothing while the proxy reads its request."""
    request_timeout: float = 120.0
    """Seconds a client may take to send one request's head and body."""
    max_connections: int = 64
    """Connections that presented the token served at once; each holds a thread."""
    max_pending: int = 256
    """Connections still sending their first request's head; past it the oldest is closed."""


class TooLarge(Exception):
    """A request body over ``ProxyLimits.max_body``."""


def new_token() -> str:
    """A fresh random token (URL-safe, 144 bits)."""
    return secrets.token_urlsafe(18)


def token_path(token: str) -> str:
    """The path segment a request starts with to present ``token``."""
    return f"/{TOKEN_PREFIX}{token}"


def admitted(path: str, header: str | None, token: str) -> str | None:
    """The request's path with the token segment removed if it presents ``token``
    (in the path or the header), else None."""
    prefix = token_path(token)
    head, sep, rest = path.partition(prefix)
    if head == "" and sep and (rest == "" or rest[0] in "/?"):
        return rest if rest.startswith("/") else "/" + rest
    if header is not None and hmac.compare_digest(header.strip().encode(), token.encode()):
        return path
    return None


def body_length(value: str | None, limit: int) -> int:
    """The declared ``Content-Length`` (0 if none); ``ValueError`` if malformed,
    ``TooLarge`` past ``limit``."""
    text = (value or "0").strip()
    if not text.isdigit() or len(text) > 30:
        raise ValueError(f"bad content-length {text[:40]!r}")
    size = int(text)
    if size > limit:
        raise TooLarge(f"request body of {size} bytes is over the proxy's {limit}-byte limit")
    return size


def read_body(rfile: Any, transfer_encoding: str, content_length: str | None, limit: int) -> bytes:
    """A request's body by its framing; ``ValueError`` if malformed, ``TooLarge`` past ``limit``."""
    if "chunked" in transfer_encoding.lower():
        return read_chunked(rfile, limit)
    return bytes(rfile.read(body_length(content_length, limit)))


_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
"""A chunk size as HTTP/1.1 writes it: hex digits only (no sign, no prefix), at most 16."""


def read_chunked(rfile: IO[bytes], limit: int) -> bytes:
    """A chunked request body, refused (``TooLarge``) as soon as it passes ``limit``."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(1024)
        digits = line.split(b";")[0].strip() or b"0"
        if not _HEX.fullmatch(digits):  # "-1", "+5", "0x10": int() would take them
            raise ValueError(f"malformed chunk size {digits[:20]!r}")
        size = int(digits, 16)
        if size == 0:
            while rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        total += size
        if total > limit:
            raise TooLarge(f"request body passes the proxy's {limit}-byte limit")
        parts.append(rfile.read(size))
        rfile.readline(1024)


class DeadlineReader:
    """A connection's reader that gives up (``TimeoutError``) when the client is idle
    for ``idle`` seconds or the current request takes past its deadline."""

    def __init__(
        self,
        raw: Any,
        sock: socket.socket,
        limits: ProxyLimits,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._raw = raw
        self._sock = sock
        self._limits = limits
        self._clock = clock
        self._deadline = clock() + limits.request_timeout

    def restart(self) -> None:
        """A new request starts: its deadline is ``request_timeout`` from now."""
        self._deadline = self._clock() + self._limits.request_timeout

    def _arm(self) -> None:
        left = self._deadline - self._clock()
        if left <= 0:
            raise TimeoutError("the client took too long to send its request")
        self._sock.settimeout(min(self._limits.read_timeout, left))

    def readline(self, size: int = -1) -> bytes:
        self._arm()
        return bytes(self._raw.readline(size))

    def read(self, size: int = -1) -> bytes:
        self._arm()
        return bytes(self._raw.read(size))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class LimitedHandler(BaseHTTPRequestHandler):
    """A request handler whose reads are bounded by ``limits`` (``DeadlineReader``)."""

    limits: ProxyLimits = ProxyLimits()

    def setup(self) -> None:
        super().setup()
        self.rfile = DeadlineReader(self.rfile, self.connection, self.limits)  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        if isinstance(self.rfile, DeadlineReader):
            self.rfile.restart()
        super().handle_one_request()


BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n"
    b"connection: close\r\nx-should-retry: true\r\n\r\n"
)
"""The answer to a request that presented the token when every slot is taken."""


class BoundedServer(ThreadingHTTPServer):
    """A threading HTTP server that serves at most ``max_connections`` admitted
    connections at once and keeps at most ``max_pending`` not yet admitted.

    A handler calls ``admit(connection)`` once a request presented the token; a
    connection never admitted never holds a slot.  When a new connection would make
    more than ``max_pending`` pending, the oldest pending one is shut down.
    """

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: Any,
        max_connections: int,
        bind_and_activate: bool = True,
        *,
        max_pending: int = 256,
    ) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        self._max_pending = max_pending
        self._pending: dict[int, socket.socket] = {}  # insertion order: oldest first
        self._admitted: set[int] = set()
        self._lock = threading.Lock()
        super().__init__(address, handler, bind_and_activate=bind_and_activate)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._pending[id(request)] = request
            evicted = []
            while len(self._pending) > self._max_pending:
                oldest = next(iter(self._pending))
                evicted.append(self._pending.pop(oldest))
        for sock in evicted:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        super().process_request(request, client_address)

    def admit(self, request: socket.socket) -> bool:
        """Give ``request`` a slot (once); False when every slot is taken."""
        with self._lock:
            if id(request) in self._admitted:
                return True
            if not self._slots.acquire(blocking=False):
                return False
            self._pending.pop(id(request), None)
            self._admitted.add(id(request))
            return True

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._pending.pop(id(request), None)
                if id(request) in self._admitted:
                    self._admitted.discard(id(request))
                    self._slots.release()
