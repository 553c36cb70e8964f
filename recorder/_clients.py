"""Ready-made HTTP clients that record, with the defaults the model SDKs use.

``OpenAI(http_client=recording_client(writer, flavor="httpx2"))`` records
every exchange of that client.  The client keeps the SDKs' own defaults
(10-minute read timeout, 5 s connect timeout, 1000 connections, redirects
followed, TCP keep-alive), which a bare ``httpx.Client`` would not.
"""

from __future__ import annotations

import importlib
import socket
from typing import TYPE_CHECKING, Any, Literal, overload

from ._transport import FLAVORS, RecordingTransport
from .redact._scrub import Redacts
from .tape._writer import Appends

if TYPE_CHECKING:
    import httpx
    import httpx2

Flavor = Literal["httpx", "httpx2"]

SDK_TIMEOUT = 600.0
"""Read/write/pool timeout, seconds, as the OpenAI and Anthropic SDKs set it."""
SDK_CONNECT_TIMEOUT = 5.0
"""Connect timeout, seconds, as the SDKs set it."""
SDK_MAX_CONNECTIONS = 1000
"""Connection pool size, as the SDKs set it."""
SDK_MAX_KEEPALIVE = 100
"""Idle connections kept, as the SDKs set it."""


def http_module(flavor: str) -> Any:
    """Import the HTTP library ``flavor`` names, with a clear error if it is absent."""
    if flavor not in FLAVORS:
        raise ValueError(f"unknown HTTP flavor {flavor!r}; expected one of {', '.join(FLAVORS)}")
    try:
        return importlib.import_module(flavor)
    except ImportError as exc:
        raise ImportError(
            f"flavor {flavor!r} needs the {flavor} package: pip install {flavor}"
        ) from exc


def sdk_client_options(flavor: str) -> dict[str, Any]:
    """Client keyword arguments matching the SDKs' ``DefaultHttpxClient``."""
    mod = http_module(flavor)
    return {
        "timeout": mod.Timeout(SDK_TIMEOUT, connect=SDK_CONNECT_TIMEOUT),
        "limits": mod.Limits(
            max_connections=SDK_MAX_CONNECTIONS, max_keepalive_connections=SDK_MAX_KEEPALIVE
        ),
        "follow_redirects": True,
    }


def _keepalive_options() -> list[tuple[int, int, int]]:
    """Socket options turning on TCP keep-alive probes where the platform has them."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5)):
        opt = getattr(socket, name, None)
        if opt is not None:
            options.append((socket.IPPROTO_TCP, opt, value))
    return options


def real_transport(flavor: str, *, async_: bool) -> Any:
    """A network transport of ``flavor`` configured like the SDKs' default one."""
    mod = http_module(flavor)
    cls = mod.AsyncHTTPTransport if async_ else mod.HTTPTransport
    limits = sdk_client_options(flavor)["limits"]
    return cls(limits=limits, socket_options=_keepalive_options())


@overload
def recording_client(
    writer: Appends,
    *,
    real: Any = None,
    async_: Literal[False] = False,
    flavor: Literal["httpx"] = "httpx",
    redactor: Redacts | None = None,
    **client_options: Any,
) -> httpx.Client: ...
@overload
def recording_client(
    writer: Appends,
    *,
    real: Any = None,
    async_: Literal[True],
    flavor: Literal["httpx"] = "httpx",
    redactor: Redacts | None = None,
    **client_options: Any,
) -> httpx.AsyncClient: ...
@overload
def recording_client(
    writer: Appends,
    *,
    real: Any = None,
    async_: Literal[False] = False,
    flavor: Literal["httpx2"],
    redactor: Redacts | None = None,
    **client_options: Any,
) -> httpx2.Client: ...
@overload
def recording_client(
    writer: Appends,
    *,
    real: Any = None,
    async_: Literal[True],
    flavor: Literal["httpx2"],
    redactor: Redacts | None = None,
    **client_options: Any,
) -> httpx2.AsyncClient: ...
def recording_client(
    writer: Appends,
    *,
    real: Any = None,
    async_: bool = False,
    flavor: Flavor = "httpx",
    redactor: Redacts | None = None,
    **client_options: Any,
) -> Any:
    """An httpx/httpx2 client whose every exchange is recorded into ``writer``.

    ``real`` is the transport that reaches the network (default: the
    flavor's HTTP transport with the SDKs' pool limits and keep-alive).
    ``flavor`` picks the library: ``"httpx2"`` for openai>=3 and
    anthropic>=2, ``"httpx"`` for older SDKs and plain httpx code.
    ``client_options`` override the SDK defaults (timeout, limits, ...).
    """
    mod = http_module(flavor)
    if real is None:
        real = real_transport(flavor, async_=async_)
    transport = RecordingTransport(writer, real, redactor=redactor)
    options = sdk_client_options(flavor) | client_options
    cls = mod.AsyncClient if async_ else mod.Client
    return cls(transport=transport, **options)
