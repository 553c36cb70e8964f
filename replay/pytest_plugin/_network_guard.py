"""Blocking the network while a test replays: only the hosts the test allows can be reached."""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

import pytest

from ._settings import MARKER, Settings

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
"""Host names that ``allow_loopback=True`` lets a replaying test look up."""


def network_blocked(message: str) -> BaseException:
    """pytest's own failure outcome (``pytest.fail.Exception``) with ``message``, no traceback.

    A ``BaseException``, so SDK retry loops and ``except Exception`` blocks in
    the code under test cannot swallow it.
    """
    error: BaseException = pytest.fail.Exception(message, pytrace=False)
    return error


# -- the network guard ----------------------------------------------------------


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host in LOOPBACK_NAMES
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class NetworkGuard:
    """Fails every socket connection and name lookup a replaying test did not allow.

    Patches ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``
    for the whole process between ``install()`` and ``remove()``; sync
    clients, asyncio and anyio all connect through them.  Unix sockets are
    always allowed.  Addresses an allowed host name resolves to become
    allowed too.
    """

    def __init__(self, settings: Settings, nodeid: str) -> None:
        self.settings = settings
        self.nodeid = nodeid
        self.allowed = set(settings.allow_hosts)
        self.blocked: list[BaseException] = []
        self._lock = threading.Lock()
        self._saved: tuple[Any, Any, Any] | None = None

    def allows(self, host: str) -> bool:
        """Whether a replaying test may reach ``host`` (a name or an address)."""
        host = host.lower().strip("[]")
        if self.settings.allow_loopback and _is_loopback(host):
            return True
        with self._lock:
            return host in self.allowed

    def _block(self, what: str, host: str) -> None:
        hint = "allow_loopback=True" if _is_loopback(host) else f"allow_hosts=[{host!r}]"
        error = network_blocked(
            f"evaltape blocked the network: {self.nodeid} tried to {what} while replaying "
            f"{self.settings.path.name} (replayed tests never reach the network; clients from "
            f"the evaltape_tape fixture are answered by the tape). To let this test reach it: "
            f"@pytest.mark.{MARKER}({hint}); to record instead: {self.settings.command}"
        )
        with self._lock:
            self.blocked.append(error)
        raise error

    def check_connect(self, sock: socket.socket, address: Any) -> None:
        """Raise pytest's failure unless ``sock`` may connect to ``address``."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host, port = str(address[0]), address[1]
        if not self.allows(host):
            shown = f"[{host}]" if ":" in host else host
            self._block(f"connect to {shown}:{port}", host)

    def check_lookup(self, host: Any) -> bool:
        """Raise pytest's failure unless ``host`` may be looked up; True if it is allowed."""
        if host is None:
            return False
        name = (host.decode("idna") if isinstance(host, bytes) else str(host)).lower()
        if self.allows(name):
            return True
        if not _is_address(name):
            self._block(f"look up {name!r}", name)
        return False

    def install(self) -> None:
        """Start blocking (idempotent)."""
        if self._saved is not None:
            return
        connect, connect_ex, getaddrinfo = (
            socket.socket.connect,
            socket.socket.connect_ex,
            socket.getaddrinfo,
        )
        self._saved = (connect, connect_ex, getaddrinfo)
        guard = self

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            guard.check_connect(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check_connect(sock, address)
            return connect_ex(sock, address)

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            trusted = guard.check_lookup(host)
            found = getaddrinfo(host, *args, **kwargs)
            if trusted:
                with guard._lock:
                    guard.allowed.update(str(info[4][0]).lower() for info in found)
            return found

        socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = guarded_getaddrinfo

    def remove(self) -> None:
        """Stop blocking."""
        if self._saved is None:
            return
        connect, connect_ex, getaddrinfo = self._saved
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo
        self._saved = None
