"""Any client's requests over the runner's one network transport.

The runner reaches the network through one sync ``httpx`` transport with its
retries (``RetryingTransport`` over a shared ``HTTPTransport``).  The SDKs a
Python agent uses speak ``httpx2``, sync or async, so ``WireBridge`` carries
each of their requests over that transport: the request is rebuilt as an
``httpx.Request`` (same method, URL, headers, body and timeouts), sent (in a
worker thread for an async client), and the response comes back as the
client's own library's response, its raw chunks streamed as they arrive.
Transport errors become the same-named error of the client's library.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio.to_thread
import httpx

from evaltape.recorder import Flavor, Flavors

_END = None


class WireBridge:
    """Sends httpx/httpx2 requests, sync or async, through ``wire`` (a sync httpx transport)."""

    def __init__(self, wire: Any) -> None:
        self.wire = wire
        self._flavors = Flavors()

    def _outbound(self, request: Any, body: bytes) -> httpx.Request:
        timeout = request.extensions.get("timeout")
        return httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.raw),
            content=body,
            extensions={"timeout": timeout} if timeout else {},
        )

    def _error(self, flavor: Flavor, exc: httpx.TransportError, request: Any) -> Exception:
        # The nearest class the client's library has too (RunStopped: its ConnectError).
        name = next(c.__name__ for c in type(exc).__mro__ if hasattr(flavor.module, c.__name__))
        return flavor.error(name, str(exc), request)

    def _send(self, flavor: Flavor, request: Any, out: httpx.Request) -> httpx.Response:
        try:
            response: httpx.Response = self.wire.handle_request(out)
        except httpx.TransportError as exc:
            raise self._error(flavor, exc, request) from exc
        return response

    def _head(self, flavor: Flavor, response: httpx.Response, stream: Any) -> Any:
        extensions = {"http_version": response.extensions.get("http_version", b"HTTP/1.1")}
        headers = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw)
        return flavor.response(response.status_code, headers, stream, extensions)

    def handle_request(self, request: Any) -> Any:
        """Send a sync request of either library."""
        if isinstance(request, httpx.Request):
            return self.wire.handle_request(request)
        flavor = self._flavors.of(request)
        response = self._send(flavor, request, self._outbound(request, request.read()))

        stream: Any = response.stream

        def chunks() -> Iterator[bytes]:
            try:
                yield from stream
            except httpx.TransportError as exc:
                raise self._error(flavor, exc, request) from exc

        return self._head(flavor, response, flavor.sync_stream(chunks, response.close))

    async def handle_async_request(self, request: Any) -> Any:
        """Send an async request of either library; the wire is used from a worker thread."""
        flavor = self._flavors.of(request)
        out = self._outbound(request, await request.aread())
        response = await anyio.to_thread.run_sync(self._send, flavor, request, out)
        stream: Any = response.stream
        raw: Iterator[bytes] = iter(stream)

        async def chunks() -> AsyncIterator[bytes]:
            while True:
                try:
                    data = await anyio.to_thread.run_sync(next, raw, _END)
                except httpx.TransportError as exc:
                    raise self._error(flavor, exc, request) from exc
                if not isinstance(data, bytes):
                    return
                yield data

        async def aclose() -> None:
            await anyio.to_thread.run_sync(response.close)

        return self._head(flavor, response, flavor.async_stream(chunks, aclose))

    def close(self) -> None:
        """Nothing to close: the wire is the run's, shared by every attempt."""

    async def aclose(self) -> None:
        """Async twin of ``close``."""
