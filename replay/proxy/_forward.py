"""Where the proxy sends requests live, by API."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from evaltape.recorder._shared import provider_of

from ._limits import TOKEN_HEADER

OPENAI_UPSTREAM = "https://api.openai.com"
"""Where OpenAI-style requests go live by default."""
ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
"""Where Anthropic requests go live by default."""


@attrs.frozen(kw_only=True)
class Upstreams:
    """Where requests go live, by API.

    A request is Anthropic's when the API table says so (``provider_of``: an
    ``anthropic-version`` header, which every Anthropic SDK sends, or a path
    starting with ``/v1/messages`` or ``/v1/complete``); every other request is
    OpenAI-style.  The request's
    path and query are appended to the chosen base URL's path.
    """

    openai: str = OPENAI_UPSTREAM
    """Base URL for OpenAI-style requests, without ``/v1``."""
    anthropic: str = ANTHROPIC_UPSTREAM
    """Base URL for Anthropic requests."""

    @classmethod
    def single(cls, base_url: str) -> Upstreams:
        """Send every request to ``base_url`` (an OpenAI-compatible gateway, a test server)."""
        return cls(openai=base_url, anthropic=base_url)

    def base_for(self, path: str, headers: Mapping[str, str]) -> str:
        """The base URL a request with this path and (lower-cased) headers goes to."""
        return self.anthropic if provider_of(path, headers) == "anthropic" else self.openai

    def url_for(self, target: str, headers: Mapping[str, str]) -> str:
        """The upstream URL of a request target (``/v1/chat/completions?x=1``)."""
        base = self.base_for(target.partition("?")[0], headers).rstrip("/")
        return base + (target if target.startswith("/") else "/" + target)


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
