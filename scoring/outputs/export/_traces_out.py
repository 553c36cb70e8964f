"""Send SDK spans with the OpenTelemetry SDK's OTLP/HTTP exporter; a failure is one line.

``OTLPSpanExporter`` does the encoding, the POST, the compression and the
retries (429, 502, 503 and 504 and lost connections, waiting what
``Retry-After`` asks or 1, 2, 4 ... s with jitter, all within the timeout).
It only answers success or failure, so it is given a ``requests.Session``
(its public ``session`` argument) that remembers the last answer, and a
failure becomes ``ExportFailed`` naming the host and what went wrong, never a
header.  Endpoint, headers, timeout and compression are passed explicitly
from the run's ``ExportConfig``.  The exporter still reads a few variables
of its own from the process (TLS certificate files, and it adds
``OTEL_EXPORTER_OTLP_HEADERS`` beneath the headers it is given), which only
matters to a library caller whose ``Host`` environment differs from the
process's.

The exporter also logs each retry and failure itself ("Transient error ...
retrying", "Failed to export span batch"), which Python prints on stderr when
nothing else handles them.  Its loggers are therefore switched off while it
sends and restored after, so the run's one warning line is all a user sees.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from ._config import Target
from ._send import ExportFailed, one_line

RETRIED = frozenset({429, 502, 503, 504})
"""Statuses the SDK's exporter tries again."""


EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
)
"""The loggers the SDK's exporter reports retries and failures on."""

_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved: dict[str, bool] = {}


@contextlib.contextmanager
def quiet_exporter() -> Iterator[None]:
    """Switch the exporter's loggers off for the block; their previous state is restored
    when the last of any overlapping blocks ends."""
    global _quiet_depth
    with _quiet_lock:
        if _quiet_depth == 0:
            for name in EXPORTER_LOGGERS:
                logger = logging.getLogger(name)
                _quiet_saved[name] = logger.disabled
                logger.disabled = True
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                for name, disabled in _quiet_saved.items():
                    logging.getLogger(name).disabled = disabled
                _quiet_saved.clear()


class _Witness(requests.Session):
    """A session that remembers how many requests it made and the last answer or error."""

    def __init__(self) -> None:
        super().__init__()
        self.tries = 0
        self.last: requests.Response | Exception | None = None

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        self.tries += 1
        try:
            response = super().request(method, url, *args, **kwargs)
        except Exception as exc:
            self.last = exc
            raise
        self.last = response
        return response


class TraceSender:
    """One SDK exporter for one target; ``send`` delivers a batch or raises ``ExportFailed``."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._session = _Witness()
        self._exporter = OTLPSpanExporter(
            endpoint=target.url,
            headers=dict(target.headers),
            timeout=target.timeout,
            compression=Compression(target.compression),
            session=self._session,
        )

    def send(self, spans: Sequence[ReadableSpan]) -> None:
        """Export ``spans`` in one request (retried by the SDK); ``ExportFailed`` if refused."""
        before = self._session.tries
        with quiet_exporter():
            result = self._exporter.export(spans)
        if result is SpanExportResult.SUCCESS:
            return
        raise ExportFailed(self.target.host, self._why(self._session.tries - before))

    def _why(self, tries: int) -> str:
        last = self._session.last
        if isinstance(last, requests.Timeout):
            return f"timed out after {self.target.timeout:g} s"
        if isinstance(last, requests.ConnectionError):
            return f"cannot connect ({one_line(str(last))})"
        if isinstance(last, Exception):
            return f"{type(last).__name__}: {one_line(str(last))}"
        if last is None:
            return "the exporter refused the batch"
        status = f"HTTP {last.status_code}"
        if last.status_code in RETRIED and tries > 1:
            return f"{status} after {tries} tries"
        detail = one_line(last.text) if last.text else last.reason
        return f"{status} {detail}".rstrip()

    def close(self) -> None:
        """Shut the exporter (and its session) down."""
        with quiet_exporter():
            self._exporter.shutdown()  # type: ignore[no-untyped-call]
