"""The error responses a program gets from the proxy: replay misses, upstream and proxy failures."""

from __future__ import annotations

import json

import httpx

from .._errors import Diverged, Exhausted, NoRecording, ReplayError

MISS_STATUS = 599
"""Status of the response a program gets when the tape cannot answer."""
UPSTREAM_STATUS = 502
"""Status of the response a program gets when the upstream could not be reached."""
PROXY_STATUS = 500
"""Status of the response a program gets when the proxy itself failed."""
BAD_REQUEST_STATUS = 400
"""Status of the response to a request the proxy cannot read (bad framing)."""
FORBIDDEN_STATUS = 403
"""Status of the response to a request without the proxy's token (nothing is recorded)."""
TOO_LARGE_STATUS = 413
"""Status of the response to a request whose body is over the proxy's limit."""
STOPPED_STATUS = 503
"""Status of the response a program gets for a model call refused because the run stopped."""


class RunStopped(httpx.ConnectError):
    """A model call refused before it was sent: the run was stopped (Ctrl-C, SIGTERM,
    SIGHUP, ...), so nothing new reaches the provider.  A ``ConnectError``, so a client
    sees it as a call that could not be sent; the proxy answers it with a 503."""


_MISS_TYPES: tuple[tuple[type[ReplayError], str], ...] = (
    (Diverged, "evaltape_diverged"),
    (NoRecording, "evaltape_no_recording"),
    (Exhausted, "evaltape_exhausted"),
)


def error_body(kind: str, message: str) -> bytes:
    """A JSON error body both SDK families parse (``error.type`` / ``error.message``)."""
    payload = {"type": "error", "error": {"type": kind, "message": message}}
    return json.dumps(payload).encode()


def miss_kind(exc: ReplayError) -> str:
    """The ``error.type`` a replay miss is reported under."""
    return next(
        (kind for cls, kind in _MISS_TYPES if isinstance(exc, cls)), "evaltape_replay_error"
    )
