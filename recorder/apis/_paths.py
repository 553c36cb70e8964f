"""Which model API a request belongs to, by its URL: the one table every part reads.

The recorder's adapters (what a recorded exchange means), the replay matcher (how a
request is normalised), the proxy (which provider a request is forwarded to) and the
runner (a recording's base URL) all decide from these, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit, urlunsplit

OPENAI_CHAT: Final = "openai.chat"
"""OpenAI Chat Completions (``POST .../chat/completions``)."""
OPENAI_RESPONSES: Final = "openai.responses"
"""OpenAI Responses (``POST .../responses``)."""
ANTHROPIC_MESSAGES: Final = "anthropic.messages"
"""Anthropic Messages (``POST .../messages``)."""

_BY_SUFFIX: Final = (
    ("/chat/completions", OPENAI_CHAT),
    ("/responses", OPENAI_RESPONSES),
    ("/messages", ANTHROPIC_MESSAGES),
)

MODEL_ENDPOINTS: Final = (
    "/chat/completions",
    "/responses",
    "/messages",
    "/completions",
    "/embeddings",
)
"""Paths a provider's base URL is followed by; what precedes one is the base URL's path."""

ANTHROPIC_PATHS: Final = ("/v1/messages", "/v1/complete")
"""Path prefixes only Anthropic's API serves."""


def api_of_path(path: str) -> str | None:
    """The model API a URL path belongs to, or None when it is no model call.

    OpenAI's Assistants API lists a thread's messages at ``/threads/{id}/messages``;
    that is not Anthropic Messages, so a path with ``/threads/`` is no model call.
    """
    path = path.rstrip("/")
    if "/threads/" in path:
        return None
    for suffix, api in _BY_SUFFIX:
        if path.endswith(suffix):
            return api
    return None


def is_anthropic(path: str, headers: Mapping[str, str]) -> bool:
    """Whether a request goes to Anthropic: an ``anthropic-version`` header (every
    Anthropic SDK sends one; ``headers`` lower-cased) or a path only Anthropic serves."""
    return "anthropic-version" in headers or path.startswith(ANTHROPIC_PATHS)


def base_url_of(url: str) -> str | None:
    """The base URL a model call's URL was made from (``http://h/v1`` of
    ``http://h/v1/chat/completions``), or None when its path ends in no model endpoint."""
    parts = urlsplit(url)
    for endpoint in MODEL_ENDPOINTS:
        if parts.path.endswith(endpoint):
            return urlunsplit((parts.scheme, parts.netloc, parts.path[: -len(endpoint)], "", ""))
    return None
