"""Which response headers a recording keeps: the rule docs/format.md states.

A hosted model API sends two dozen headers with every response, and a third of
them carry a value of their own each time (request ids, rate-limit counters,
the date, a load balancer's cookie).  Nothing a replay does depends on them:
an SDK reads the status, the content type and, on a failure, the retry
headers; every other header it only passes on to the caller.  Stored, they
were an eighth of a streamed tape.  So a successful response (status below
400) is recorded without the headers ``volatile`` names; a failed one keeps
every header, since an SDK's retry logic reads some of them.
"""

from __future__ import annotations

from ._events import Headers

VOLATILE = frozenset(
    {
        "date",
        "cf-ray",
        "set-cookie",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "x-envoy-upstream-service-time",
    }
)
"""Response headers whose value differs on every request and that no SDK acts on."""

_RATE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
_RATE_COUNTERS = ("-remaining", "-reset")


def volatile(name: str) -> bool:
    """Whether a successful response's header ``name`` (lower case) goes unrecorded:
    one of ``VOLATILE``, or a rate-limit counter (``x-ratelimit-remaining-*``,
    ``x-ratelimit-reset-*``, ``anthropic-ratelimit-*-remaining``, ``...-reset``)."""
    if name in VOLATILE:
        return True
    if name.startswith(_RATE_PREFIXES):
        rest = name.partition("ratelimit-")[2]
        return rest.startswith(("remaining-", "reset-")) or rest.endswith(_RATE_COUNTERS)
    return False


def kept_headers(status: int, headers: Headers) -> Headers:
    """The response headers a recording keeps (all of them for a status of 400 or more)."""
    if status >= 400:
        return headers
    return tuple(pair for pair in headers if not volatile(pair[0]))
