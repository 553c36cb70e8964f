"""Replay misses answered in-process the way the proxy answers them: a final 599.

An SDK handed a replay client sees a miss (``Diverged``, ``Exhausted``,
``NoRecording``) as an exception from its transport.  The Anthropic SDK turns
any transport exception into ``APIConnectionError`` and retries it, so one
divergence became three, each a new miss.  ``MissResponses`` wraps the
transport a client uses and turns a miss into the proxy's answer instead:
status 599, ``x-should-retry: false`` (both SDK families obey it) and the
miss's message as the error body.  The miss is still kept by the
``ReplayTransport`` (``misses``, ``finish()``), so the replay still fails.
"""

from __future__ import annotations

from typing import Any

from evaltape.recorder import Flavors

from ._errors import ReplayError
from .proxy._errors import MISS_STATUS, error_body, miss_kind


class MissResponses:
    """Wraps ``transport`` (sync or async, httpx or httpx2); a replay miss becomes a 599."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self._flavors = Flavors()

    def _answer(self, request: Any, exc: ReplayError, *, async_: bool) -> Any:
        flavor = self._flavors.of(request)
        data = error_body(miss_kind(exc), str(exc))
        headers = (
            ("content-type", "application/json"),
            ("content-length", str(len(data))),
            ("x-should-retry", "false"),
        )
        if async_:

            async def achunks() -> Any:
                yield data

            async def aclose() -> None:
                return None

            stream = flavor.async_stream(achunks, aclose)
        else:
            stream = flavor.sync_stream(lambda: iter((data,)), lambda: None)
        return flavor.response(MISS_STATUS, headers, stream, {"http_version": b"HTTP/1.1"})

    def handle_request(self, request: Any) -> Any:
        """Send ``request``; a replay miss comes back as a 599 response."""
        try:
            return self.transport.handle_request(request)
        except ReplayError as exc:
            return self._answer(request, exc, async_=False)

    async def handle_async_request(self, request: Any) -> Any:
        """Async twin of ``handle_request``."""
        try:
            return await self.transport.handle_async_request(request)
        except ReplayError as exc:
            return self._answer(request, exc, async_=True)

    def close(self) -> None:
        """Close the wrapped transport."""
        close = getattr(self.transport, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        """Async twin of ``close``."""
        aclose = getattr(self.transport, "aclose", None)
        if aclose is not None:
            await aclose()

    def __enter__(self) -> MissResponses:
        enter = getattr(self.transport, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        leave = getattr(self.transport, "__exit__", None)
        if leave is not None:
            leave(*exc_info)
        else:
            self.close()

    async def __aenter__(self) -> MissResponses:
        enter = getattr(self.transport, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        leave = getattr(self.transport, "__aexit__", None)
        if leave is not None:
            await leave(*exc_info)
        else:
            await self.aclose()
