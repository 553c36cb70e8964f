"""The replay transport: serves a recorded session and never opens a socket.

Each request is matched against the session's recorded requests (see
``_match``); the recorded response comes back with its status, headers and
raw body chunks exactly as they arrived live, still content-encoded, so the
client decodes them as it did then.  A recorded transport failure is raised
again as the same httpx/httpx2 exception, after the same chunks.

One instance serves both httpx and httpx2 clients, sync and async: the
request's own library decides which classes are built.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any

import anyio
import attrs

from evaltape.recorder import (
    Chunk,
    Event,
    Exchange,
    Flavor,
    RecordedSession,
    RecordingTransport,
    Request,
    Response,
    role_of,
)
from evaltape.recorder._shared import Flavors, request_record
from evaltape.recorder.redact import Redacts, Scrubber, default_redactor

from ._errors import ReplayError
from ._match import Divergence
from ._matcher import Matcher, Recorded

RETRYABLE = frozenset({408, 409, 429})
"""Statuses (besides 5xx) after which the SDKs retry."""

FAST_RETRY_MS = "1"
"""``retry-after-ms`` served on retryable responses: the smallest wait SDKs
honour (a zero makes them fall back to their own exponential backoff)."""


def _scale(timing: str | float) -> float:
    if timing == "instant":
        return 0.0
    if timing == "real":
        return 1.0
    if isinstance(timing, int | float) and not isinstance(timing, bool) and timing >= 0:
        return float(timing)
    raise ValueError(f"timing must be 'instant', 'real' or a factor >= 0, got {timing!r}")


def fast_retry_headers(
    status: int, headers: Iterable[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """Recorded headers with every wait hint zeroed, so SDK retries do not sleep.

    ``retry-after`` becomes ``0``, ``x-ratelimit-reset-*`` becomes ``0s``, and
    retryable responses carry ``retry-after-ms: 1`` (see ``FAST_RETRY_MS``).
    """
    out: list[tuple[str, str]] = []
    for name, value in headers:
        if name == "retry-after":
            value = "0"
        elif name == "retry-after-ms":
            continue
        elif name.startswith("x-ratelimit-reset"):
            value = "0s"
        out.append((name, value))
    if status in RETRYABLE or status >= 500 or any(n == "retry-after" for n, _ in out):
        out.append(("retry-after-ms", FAST_RETRY_MS))
    return tuple(out)


@attrs.frozen(kw_only=True)
class Unmatched:
    """A request the tape could not answer exactly, as matched (redacted, scrubbed)."""

    request: Request
    """The request the harness sent."""
    nearest: Exchange | None
    """The recorded exchange that came closest (lenient mode: the one served), its
    request scrubbed as matching saw it."""
    error: Exception | None = attrs.field(default=None, eq=False, repr=False)
    """The miss (``Diverged``, ``Exhausted``, ``NoRecording``), raised to the client
    or, when the request was served anyway, kept here."""


class ReplayTransport:
    """Serves one recorded session to an httpx or httpx2 client.

    ``recording`` is a ``RecordedSession`` or its events (non-exchanges and
    exchanges tagged with a role, ``recorder.role_of``, are skipped).
    ``strict`` (default) raises on any request the tape cannot answer
    exactly; lenient mode serves the nearest recorded response,
    sets ``tainted`` and lists each miss in ``divergences``.  ``keep_going``
    (strict only) serves a changed request the nearest recorded response not
    served yet, so the harness runs to its end and every later request can be
    classified: each such request is in ``unmatched`` with its error, and
    ``finish()`` raises the first; with no unserved recording left the miss is
    raised to the client as in strict mode.  ``timing`` is
    ``"instant"`` (default), ``"real"`` (sleep by the recorded chunk
    offsets) or a factor scaling them.  ``fast_retries`` zeroes recorded
    wait hints (see ``fast_retry_headers``).  ``fallback``, a recording
    transport, receives every request the tape cannot answer and also
    records the replayed exchanges, so its session is complete (record mode
    NEW_EPISODES).  Call ``finish()`` at the end to check that every
    recorded call was requested.  Requests are redacted by ``redactor``
    (default: ``recorder.redact.default_redactor()``) before matching, exactly as
    they were before recording.  ``scrubber`` (a ``recorder.redact.Scrubber``, which
    wraps its own redactor and then replaces ``redactor``) scrubs each request
    before matching, as the recording was scrubbed, and restores the workspace
    placeholder in the responses it serves.
    """

    def __init__(
        self,
        recording: RecordedSession | Iterable[Event],
        *,
        session_id: str = "",
        strict: bool = True,
        keep_going: bool = False,
        timing: str | float = "instant",
        fast_retries: bool = True,
        ignore_headers: Iterable[str] = (),
        fallback: RecordingTransport | None = None,
        redactor: Redacts | None = None,
        scrubber: Scrubber | None = None,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        if isinstance(recording, RecordedSession):
            session_id = session_id or recording.session_id
            events: Iterable[Event] = recording.events
        else:
            events = recording
        # Calls tagged with a role were made by someone else, not the agent: never served.
        exchanges = [e for e in events if isinstance(e, Exchange) and role_of(e) is None]
        self.matcher = Matcher(
            exchanges,
            session_id=session_id,
            strict=strict or fallback is not None,
            keep_going=keep_going and strict and fallback is None,
            ignore_headers=ignore_headers,
            rewrite=scrubber.rescrub_exchange if scrubber is not None and scrubber.rules else None,
        )
        self.scale = _scale(timing)
        self.fast_retries = fast_retries
        self.fallback = fallback
        self.redactor: Redacts = redactor if redactor is not None else default_redactor()
        self.scrubber = scrubber
        if scrubber is not None:
            self.redactor = scrubber
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._flavors = Flavors()
        self.misses: list[ReplayError] = []
        """Every error raised to a client, in order (SDKs may wrap or swallow them)."""
        self.recorded: tuple[Exchange, ...] = tuple(exchanges)
        """The exchanges this transport serves, in recorded order."""
        self.unmatched: list[Unmatched] = []
        """Every request that matched no recorded one exactly, with its nearest recording."""

    @property
    def tainted(self) -> bool:
        """True once a response was served to a request that did not match it exactly."""
        return self.matcher.tainted

    @property
    def divergences(self) -> list[Divergence]:
        """Every lenient-mode miss, in order."""
        return self.matcher.divergences

    def finish(self) -> None:
        """Check the replay at the session's end.

        Raises the first miss already raised to the client (an SDK may have
        wrapped it, retried, or the harness may have caught it), else
        ``UnusedRecordings`` if recorded calls were never requested.
        """
        if self.misses:
            raise self.misses[0]
        self.matcher.finish()

    def _take(self, request: Any, body: bytes) -> Recorded | None:
        raw = request_record(request, body)
        # A request byte-identical to a recorded one (recordings are redacted)
        # holds no secret the redactor would mask: serve it without a scan.
        rec = self.matcher.take_exact(raw.method, raw.url, raw.headers, raw.body)
        if rec is None:
            sent = self.redactor.redact_exchange(
                Exchange(at=0.0, duration=0.0, request=raw)
            ).request
            before = len(self.matcher.divergences)
            try:
                rec = self.matcher.take(sent.method, sent.url, sent.headers, sent.body)
            except ReplayError as exc:
                nearest = self._ordinal(getattr(exc, "nearest", 0))
                self.unmatched.append(Unmatched(request=sent, nearest=nearest, error=exc))
                if self.fallback is None:
                    self.misses.append(exc)
                    raise
                return None
            if len(self.matcher.divergences) > before:  # served although changed
                missed = reversed(self.matcher.divergences)
                error = next((d.error for d in missed if d.served == rec.ordinal), None)
                self.unmatched.append(Unmatched(request=sent, nearest=rec.exchange, error=error))
        if self.fallback is not None:
            self.fallback.record(attrs.evolve(rec.exchange, at=self.fallback.clock()))
        return rec

    def _ordinal(self, ordinal: int) -> Exchange | None:
        """The recorded exchange of this ordinal, as matching saw it (rescrubbed)."""
        recorded = self.matcher.recorded
        return recorded[ordinal - 1].exchange if 0 < ordinal <= len(recorded) else None

    @property
    def served(self) -> int:
        """Requests answered from the tape so far (matched or, keeping going, not)."""
        return len(self.recorded) - len(self.matcher.unused())

    def _served(self, response: Response) -> tuple[Chunk, ...]:
        """The chunks to serve: as recorded, the workspace placeholder restored."""
        if self.scrubber is None:
            return response.chunks
        return tuple(self.scrubber.restore_chunk(c, response.headers) for c in response.chunks)

    def _headers(self, exchange: Exchange) -> tuple[tuple[str, str], ...]:
        assert exchange.response is not None
        headers = exchange.response.headers
        if self.scrubber is not None:
            size = str(sum(len(c.data) for c in self._served(exchange.response)))
            headers = tuple((k, size if k == "content-length" else v) for k, v in headers)
        if self.fast_retries:
            return fast_retry_headers(exchange.response.status, headers)
        return headers

    def _failure(self, flavor: Flavor, exchange: Exchange, request: Any) -> Exception:
        assert exchange.error is not None
        return flavor.error(exchange.error.type, exchange.error.message, request)

    def handle_request(self, request: Any) -> Any:
        """Answer ``request`` from the tape."""
        rec = self._take(request, request.read())
        if rec is None:
            assert self.fallback is not None
            return self.fallback.handle_request(request)
        flavor = self._flavors.of(request)
        exchange = rec.exchange
        if exchange.response is None:
            if self.scale:
                self._sleep(exchange.duration * self.scale)
            raise self._failure(flavor, exchange, request)
        response = exchange.response

        def chunks() -> Iterator[bytes]:
            previous = 0.0
            for chunk in self._served(response):
                if self.scale:
                    self._sleep(max(0.0, chunk.at - previous) * self.scale)
                    previous = chunk.at
                yield chunk.data
            if exchange.error is not None:
                raise self._failure(flavor, exchange, request)

        stream = flavor.sync_stream(chunks, lambda: None)
        return flavor.response(
            response.status, self._headers(exchange), stream, {"http_version": b"HTTP/1.1"}
        )

    async def handle_async_request(self, request: Any) -> Any:
        """Async twin of ``handle_request``."""
        rec = self._take(request, await request.aread())
        if rec is None:
            assert self.fallback is not None
            return await self.fallback.handle_async_request(request)
        flavor = self._flavors.of(request)
        exchange = rec.exchange
        if exchange.response is None:
            if self.scale:
                await self._async_sleep(exchange.duration * self.scale)
            raise self._failure(flavor, exchange, request)
        response = exchange.response

        async def chunks() -> AsyncIterator[bytes]:
            previous = 0.0
            for chunk in self._served(response):
                if self.scale:
                    await self._async_sleep(max(0.0, chunk.at - previous) * self.scale)
                    previous = chunk.at
                yield chunk.data
            if exchange.error is not None:
                raise self._failure(flavor, exchange, request)

        async def aclose() -> None:
            return None

        stream = flavor.async_stream(chunks, aclose)
        return flavor.response(
            response.status, self._headers(exchange), stream, {"http_version": b"HTTP/1.1"}
        )

    def close(self) -> None:
        """Close the fallback transport, if any (the tape needs no closing)."""
        if self.fallback is not None:
            self.fallback.close()

    async def aclose(self) -> None:
        """Async twin of ``close``."""
        if self.fallback is not None:
            await self.fallback.aclose()

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ReplayTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
