"""The resource every exported span is sent under, read from the standard variables.

``OTEL_RESOURCE_ATTRIBUTES`` is a comma-separated list of ``key=value``
(values url-decoded) and ``OTEL_SERVICE_NAME`` sets ``service.name``, winning
over the same key in the list, as the OpenTelemetry SDK reads them.  They are
read here from the run's environment (not the process's), so a library
caller's ``Host`` decides.  Without either, ``service.name`` is ``evaltape``.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from ..._errors import ScoringError

DEFAULT_SERVICE = "evaltape"
"""``service.name`` when neither variable names one."""


class ExportConfigError(ScoringError):
    """An export variable holds something unusable; the message names the variable."""


def resource_attributes(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """``service.name`` first, then the other ``OTEL_RESOURCE_ATTRIBUTES`` in their order.

    A malformed entry is refused by its position, never echoing its value.
    """
    name = "OTEL_RESOURCE_ATTRIBUTES"
    found: dict[str, str] = {}
    for n, item in enumerate(environ.get(name, "").split(","), start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ExportConfigError(f"{name}: entry {n} is not key=value")
        found[key.strip()] = unquote(value.strip())
    service = environ.get("OTEL_SERVICE_NAME", "").strip()
    if service:
        found["service.name"] = service
    first = found.pop("service.name", DEFAULT_SERVICE)
    return (("service.name", first), *found.items())
