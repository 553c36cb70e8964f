"""Model calls over the network: one shared transport, and retries below the recorder.

Both the runner (every live attempt's calls) and the judge (its own calls) send
through these, so a rate limit or a provider 5xx is retried the same way for
both, and a run's stop refuses new calls from either.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx

from evaltape.replay import RunStopped

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
"""Provider statuses retried below the recording transport."""
AUTH_STATUSES = frozenset({401, 403})
"""Provider statuses that stop the whole run: the credentials are refused."""


# -- retries below the recording transport ------------------------------------


def retry_delay(headers: httpx.Headers, attempt: int, *, base: float, cap: float) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the provider's hint, else backoff.

    ``retry-after-ms`` wins over ``retry-after`` (seconds); an HTTP-date or a
    missing hint falls back to ``base * 2**attempt``.  Never more than ``cap``.
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value: str | None = headers.get(name)
        if value is None:
            continue
        try:
            return min(cap, max(0.0, float(value) * scale))
        except ValueError:
            continue
    return min(cap, base * 2.0**attempt)


STOPPED = "evaltape: the run was stopped; no new model calls are sent"
"""What a call refused after a stop is told when no ``refusal`` says more."""


class RetryingTransport:
    """Retries rate limits, provider 5xx and connection failures before anyone sees them.

    It sits *below* the recording transport, so the agent (and the tape) sees
    only the final response; each retry is reported through ``on_retry`` (the
    runner records it as a ``RunnerFact``).  A 401/403 is passed on unchanged
    after ``on_auth`` is told.  Once ``stop`` is set nothing more is sent: a
    new call, or the retry of one, raises ``RunStopped`` (a ``ConnectError``)
    with the text ``refusal`` gives, which the recording transport above
    records; waits end early.  A call already sent goes on to its answer.
    """

    def __init__(
        self,
        real: Any,
        *,
        retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 60.0,
        on_retry: Callable[[str], None] = lambda message: None,
        on_auth: Callable[[str], None] = lambda message: None,
        stop: threading.Event | None = None,
        refusal: Callable[[], str] = lambda: STOPPED,
        close_real: bool = True,
    ) -> None:
        self.real = real
        self.refusal = refusal
        self.close_real = close_real
        self.retries = retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.on_retry = on_retry
        self.on_auth = on_auth
        self.stop = stop if stop is not None else threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; retry while the answer is retryable and tries remain."""
        for n in range(self.retries + 1):
            last = n == self.retries
            if self.stop.is_set():  # neither a new call nor a retry is sent after a stop
                raise RunStopped(self.refusal(), request=request)
            try:
                response: httpx.Response = self.real.handle_request(request)
            except httpx.TransportError as exc:
                if last or isinstance(exc, httpx.TimeoutException) or self.stop.is_set():
                    raise
                delay = min(self.max_delay, self.base_delay * 2**n)
                self.on_retry(f"retry {n + 1}: {type(exc).__name__}: {exc} (waited {delay:g} s)")
                self.stop.wait(delay)
                continue
            status: int = response.status_code
            if status in AUTH_STATUSES:
                self.on_auth(f"HTTP {status} from {request.url}")
                return response
            if status not in RETRY_STATUSES or last or self.stop.is_set():
                return response
            delay = retry_delay(response.headers, n, base=self.base_delay, cap=self.max_delay)
            response.close()
            self.on_retry(f"retry {n + 1}: HTTP {status} (waited {delay:g} s)")
            self.stop.wait(delay)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the real transport, unless it is shared (``close_real=False``)."""
        close = getattr(self.real, "close", None)
        if close is not None and self.close_real:
            close()


def network_transport() -> httpx.HTTPTransport:
    """A network transport with the SDKs' pool size, to share between attempts.

    Building one loads the system's CA certificates (tens of milliseconds
    holding the GIL), so a run builds one and every attempt borrows it.
    """
    return httpx.HTTPTransport(
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    )
