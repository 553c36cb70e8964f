"""Ready-made HTTP clients that replay a tape, with the SDKs' defaults.

``OpenAI(http_client=replay_client(tape, flavor="httpx2"))`` answers every
request of that client from ``tape`` (a ``ReplayTransport``, or a recorded
session to build one from).  Keep the transport to call ``finish()`` and to
read ``tainted``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, overload

from evaltape.recorder import Event, RecordedSession, http_module, sdk_client_options

from ._transport import ReplayTransport

if TYPE_CHECKING:
    import httpx
    import httpx2

Source = ReplayTransport | RecordedSession | Iterable[Event]


@overload
def replay_client(
    source: Source,
    *,
    async_: Literal[False] = False,
    flavor: Literal["httpx"] = "httpx",
    **client_options: Any,
) -> httpx.Client: ...
@overload
def replay_client(
    source: Source,
    *,
    async_: Literal[True],
    flavor: Literal["httpx"] = "httpx",
    **client_options: Any,
) -> httpx.AsyncClient: ...
@overload
def replay_client(
    source: Source,
    *,
    async_: Literal[False] = False,
    flavor: Literal["httpx2"],
    **client_options: Any,
) -> httpx2.Client: ...
@overload
def replay_client(
    source: Source,
    *,
    async_: Literal[True],
    flavor: Literal["httpx2"],
    **client_options: Any,
) -> httpx2.AsyncClient: ...
def replay_client(
    source: Source,
    *,
    async_: bool = False,
    flavor: Literal["httpx", "httpx2"] = "httpx",
    **client_options: Any,
) -> Any:
    """An httpx/httpx2 client answered by a replay transport; it opens no socket.

    ``source`` is a ``ReplayTransport`` (keep it to call ``finish()``) or a
    recorded session (a strict, instant transport is built for it).
    ``client_options`` override the SDK defaults (timeout, limits, ...).
    """
    mod = http_module(flavor)
    transport = source if isinstance(source, ReplayTransport) else ReplayTransport(source)
    options = sdk_client_options(flavor) | client_options
    cls = mod.AsyncClient if async_ else mod.Client
    return cls(transport=transport, **options)
