"""POST one export body with bounded retries; every failure is one line.

429 and 5xx are retried with exponential backoff, honouring ``Retry-After``
(seconds or an HTTP date, capped at ``max_delay``), at most ``attempts``
times in all.  Any other 4xx, a refused connection and a timeout are not
retried: they fail at once with ``ExportFailed``, whose message says what
happened and never holds a header.  The sleep and the clock are passed in,
so tests need not wait.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable

import attrs
import httpx

from ..._errors import ScoringError
from ._config import Target

RETRIED = frozenset({429, 500, 502, 503, 504})
"""Statuses worth another try: rate limited, or the collector is briefly unwell."""


class ExportFailed(ScoringError):
    """A body could not be delivered; the message is one line naming the host."""

    def __init__(self, host: str, what: str) -> None:
        super().__init__(f"export to {host} failed: {what}")
        self.host = host
        self.what = what


@attrs.frozen(kw_only=True)
class Backoff:
    """How retries wait."""

    attempts: int = 4
    """Tries in all, the first included."""
    base_delay: float = 1.0
    """Seconds before the second try; doubled for each later one."""
    max_delay: float = 30.0
    """Longest wait, whatever ``Retry-After`` asks."""


DEFAULT_BACKOFF = Backoff()
"""Four tries, waiting 1, 2 and 4 seconds (or what ``Retry-After`` asks, up to 30)."""


def retry_after(value: str | None, now: Callable[[], float]) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or HTTP date), None if unusable."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


class Sender:
    """Delivers bodies over one shared ``httpx.Client``."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock

    def post(self, target: Target, body: bytes, content_type: str) -> httpx.Response:
        """POST ``body`` to ``target``; the 2xx response, or ``ExportFailed``."""
        return self.send("POST", target, body, content_type)

    def get(self, target: Target, params: dict[str, str | int]) -> httpx.Response:
        """GET ``target`` with query ``params``: the 2xx or 404 response (the caller decides
        what a missing resource means), or ``ExportFailed``."""
        return self.send("GET", target, b"", "", params)

    def send(
        self,
        method: str,
        target: Target,
        body: bytes,
        content_type: str,
        params: dict[str, str | int] | None = None,
    ) -> httpx.Response:
        """One request with the retries above; the 2xx response, or ``ExportFailed``."""
        headers = dict(target.headers)
        if content_type:
            headers["content-type"] = content_type
        host = target.host
        tries = max(1, self.backoff.attempts)
        for n in range(tries):
            try:
                response = self.client.request(
                    method,
                    target.url,
                    content=body or None,
                    params=params,
                    headers=headers,
                    timeout=target.timeout,
                )
            except httpx.TimeoutException:
                raise ExportFailed(host, f"timed out after {target.timeout:g} s") from None
            except httpx.ConnectError as exc:
                raise ExportFailed(host, f"cannot connect ({one_line(str(exc))})") from None
            except httpx.HTTPError as exc:
                raise ExportFailed(host, f"{type(exc).__name__}: {one_line(str(exc))}") from None
            if response.is_success or (method == "GET" and response.status_code == 404):
                return response
            status = f"HTTP {response.status_code}"
            detail = one_line(response.text) if response.text else response.reason_phrase
            if response.status_code not in RETRIED:
                raise ExportFailed(host, f"{status} {detail}".rstrip())
            if n == tries - 1:
                raise ExportFailed(host, f"{status} after {tries} tries")
            asked = retry_after(response.headers.get("retry-after"), self.clock)
            wait = self.backoff.base_delay * 2**n if asked is None else asked
            self.sleep(min(wait, self.backoff.max_delay))
        raise AssertionError("unreachable")
