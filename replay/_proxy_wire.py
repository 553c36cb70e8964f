"""What the proxy never forwards: headers of one connection, bodies of bodiless statuses."""

from __future__ import annotations

from evaltape.replay._proxy_limits import TOKEN_HEADER

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
        "content-length",
        TOKEN_HEADER,
    }
)
"""Headers that describe one connection, not the message; never forwarded
(``host`` and ``content-length`` are set again for the next hop)."""


NO_BODY = frozenset({204, 304})
"""Statuses whose responses carry no body."""
