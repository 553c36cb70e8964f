"""Where traces and scores go, read from the environment once, at the boundary.

Two kinds of target, chosen by the standard variables:

- Langfuse, when ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` are set
  (``LANGFUSE_BASE_URL``, or the deprecated ``LANGFUSE_HOST``, default
  ``https://cloud.langfuse.com``): traces go to
  ``{host}/api/public/otel/v1/traces`` with Basic auth ``public:secret`` and
  ``x-langfuse-ingestion-version: 4``; scores go to ``{host}/api/public/scores``.
- any OTLP/HTTP collector: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as
  it is, ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets ``/v1/traces`` appended;
  headers from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, else
  ``OTEL_EXPORTER_OTLP_HEADERS`` (comma-separated, url-encoded ``key=value``;
  the traces-specific variable replaces the generic one, as the SDK reads
  them); timeout in milliseconds from ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` or
  ``OTEL_EXPORTER_OTLP_TIMEOUT`` (default 10 000); ``gzip`` or ``none`` from
  ``OTEL_EXPORTER_OTLP_TRACES_COMPRESSION`` or ``OTEL_EXPORTER_OTLP_COMPRESSION``.

Every target gets the resource ``OTEL_RESOURCE_ATTRIBUTES`` and
``OTEL_SERVICE_NAME`` describe (``_resource``).

Langfuse wins when both are configured.  Header values and keys are kept out
of every ``repr`` and message: ``describe`` names endpoints only.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

import attrs

from ._resource import ExportConfigError as ExportConfigError
from ._resource import resource_attributes

DEFAULT_LANGFUSE_HOST = "https://cloud.langfuse.com"
"""Langfuse's cloud, used when keys are set and no ``LANGFUSE_BASE_URL`` (or ``LANGFUSE_HOST``)."""

LANGFUSE_URL_VARS = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST")
"""Where Langfuse's URL is read, first set wins (``LANGFUSE_HOST`` is the deprecated name)."""

COMPRESSIONS = ("none", "gzip")
"""``OTEL_EXPORTER_OTLP_COMPRESSION`` values the traces may be sent with."""

LANGFUSE_TRACES_PATH = "/api/public/otel/v1/traces"
"""Langfuse's OTLP/HTTP traces endpoint, below the host."""

LANGFUSE_SCORES_PATH = "/api/public/scores"
"""Langfuse's scores API, below the host."""

INGESTION_VERSION = "4"
"""``x-langfuse-ingestion-version`` sent with traces."""

DEFAULT_TIMEOUT = 10.0
"""Seconds one request may take when no ``OTEL_EXPORTER_OTLP_*TIMEOUT`` says otherwise."""

ENVIRONMENT_VARS = ("EVALTAPE_EXPORT_ENVIRONMENT", "LANGFUSE_TRACING_ENVIRONMENT")
"""Where the Langfuse environment of the traces is read, first set wins."""

_ENVIRONMENT = re.compile(r"^(?!langfuse)[a-z0-9_-]{1,40}$")


@attrs.frozen(kw_only=True)
class Target:
    """One HTTP endpoint and what to send it."""

    url: str
    """Full URL."""
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)
    """Request headers (may hold keys: never printed)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds one request may take."""
    compression: str = "none"
    """``none`` or ``gzip`` (traces only)."""

    @property
    def host(self) -> str:
        """``host[:port]`` of the URL, for messages."""
        return urlsplit(self.url).netloc.rpartition("@")[2]


@attrs.frozen(kw_only=True)
class ExportConfig:
    """Where one run's traces (and, for Langfuse, scores) go."""

    traces: Target
    """The OTLP/HTTP traces endpoint."""
    scores: Target | None = None
    """Langfuse's scores endpoint; None for a plain OTLP collector."""
    environment: str = "default"
    """The Langfuse environment every trace and score is put in."""
    resource: tuple[tuple[str, str], ...] = ()
    """Resource attributes from ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME``."""
    user: str = ""
    """``EVALTAPE_EXPORT_USER``: the user every trace is put under ("" for none)."""

    @property
    def langfuse(self) -> bool:
        """True when the target is Langfuse."""
        return self.scores is not None

    def describe(self) -> str:
        """One line naming the endpoints, never a key, header value or URL credentials."""
        if self.scores is not None:
            return (
                f"traces to {shown(self.traces.url)} and scores to {shown(self.scores.url)} "
                "(Langfuse)"
            )
        return f"traces to {shown(self.traces.url)} (OTLP/HTTP)"


def shown(url: str) -> str:
    """``url`` without the ``user:password@`` part, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _url(value: str, name: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ExportConfigError(f"{name}: expected an http:// or https:// URL")
    return value.strip()


def parse_headers(value: str, name: str) -> tuple[tuple[str, str], ...]:
    """``k1=v1,k2=v2`` (url-encoded) as header pairs; names lower-cased.

    A malformed entry is refused by its position, never echoing its value.
    """
    out: list[tuple[str, str]] = []
    for n, item in enumerate(value.split(","), start=1):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        key = unquote(key).strip().lower()
        if not sep or not key:
            raise ExportConfigError(f"{name}: entry {n} is not key=value")
        out.append((key, unquote(val).strip()))
    return tuple(out)


def _timeout(environ: Mapping[str, str]) -> float:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        raw = environ.get(name, "").strip()
        if raw:
            try:
                millis = float(raw)
            except ValueError:
                raise ExportConfigError(f"{name}: expected milliseconds, got {raw!r}") from None
            if not millis > 0:
                raise ExportConfigError(f"{name}: must be positive, got {raw!r}")
            return millis / 1000
    return DEFAULT_TIMEOUT


def _environment(environ: Mapping[str, str]) -> str:
    for name in ENVIRONMENT_VARS:
        raw = environ.get(name, "").strip()
        if raw:
            if not _ENVIRONMENT.match(raw):
                raise ExportConfigError(
                    f"{name}: {raw!r} is not an environment name (lower-case letters, digits, "
                    "- and _, at most 40, not starting with 'langfuse')"
                )
            return raw
    return "default"


def _langfuse(environ: Mapping[str, str], timeout: float) -> ExportConfig:
    public = environ.get("LANGFUSE_PUBLIC_KEY", "").strip()
    secret = environ.get("LANGFUSE_SECRET_KEY", "").strip()
    if not public or not secret:
        missing = "LANGFUSE_SECRET_KEY" if public else "LANGFUSE_PUBLIC_KEY"
        raise ExportConfigError(f"{missing} is not set (Langfuse needs both keys)")
    named = [(n, environ.get(n, "").strip()) for n in LANGFUSE_URL_VARS]
    raw_name, raw_host = next(((n, v) for n, v in named if v), ("", ""))
    host = _url(raw_host, raw_name) if raw_host else DEFAULT_LANGFUSE_HOST
    host = host.rstrip("/")
    token = base64.b64encode(f"{public}:{secret}".encode()).decode("ascii")
    auth = ("authorization", f"Basic {token}")
    traces = Target(
        url=host + LANGFUSE_TRACES_PATH,
        headers=(auth, ("x-langfuse-ingestion-version", INGESTION_VERSION)),
        timeout=timeout,
        compression=_compression(environ),
    )
    scores = Target(url=host + LANGFUSE_SCORES_PATH, headers=(auth,), timeout=timeout)
    return ExportConfig(traces=traces, scores=scores)


def export_config(environ: Mapping[str, str]) -> ExportConfig | None:
    """The export target the environment configures; None when none is.

    Raises ``ExportConfigError`` naming the variable when one is unusable.
    ``OTEL_SDK_DISABLED=true`` turns exporting off.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    langfuse = any(
        environ.get(k, "").strip()
        for k in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", *LANGFUSE_URL_VARS)
    )
    specific = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    generic = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not (langfuse or specific or generic):
        return None
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "").strip()
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
    )
    if protocol and protocol != "http/protobuf":
        raise ExportConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf is supported, got {protocol!r}"
        )
    timeout = _timeout(environ)
    environment = _environment(environ)
    resource = resource_attributes(environ)
    user = environ.get("EVALTAPE_EXPORT_USER", "").strip()
    if langfuse:
        lf = _langfuse(environ, timeout)
        return attrs.evolve(lf, environment=environment, resource=resource, user=user)
    if specific:
        url = _url(specific, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    else:
        url = _url(generic, "OTEL_EXPORTER_OTLP_ENDPOINT").rstrip("/") + "/v1/traces"
    name = next(
        (
            n
            for n in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
            if environ.get(n, "").strip()
        ),
        "OTEL_EXPORTER_OTLP_HEADERS",
    )
    headers = dict(parse_headers(environ.get(name, ""), name))
    target = Target(
        url=url, headers=tuple(headers.items()), timeout=timeout, compression=_compression(environ)
    )
    return ExportConfig(traces=target, environment=environment, resource=resource, user=user)


def _compression(environ: Mapping[str, str]) -> str:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
        raw = environ.get(name, "").strip().lower()
        if raw:
            if raw not in COMPRESSIONS:
                raise ExportConfigError(f"{name}: expected none or gzip, got {raw!r}")
            return raw
    return "none"
