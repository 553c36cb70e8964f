"""The model APIs evaltape knows, in one explicit table every part reads.

The recorder's adapters (what a recorded exchange means), the replay matcher (how a
request is normalised), the change view (how a request splits into a conversation),
the proxy (which provider a request is forwarded to) and the runner (a recording's
base URL) all decide from ``APIS``, so they never disagree.  Each row is the
``ApiSpec`` its API's module builds beside its decoders; a new API is a module and
a row here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from .._events import Headers
from . import _anthropic, _openai_chat, _openai_responses
from ._spec import ApiSpec

APIS: Final[tuple[ApiSpec, ...]] = (_anthropic.SPEC, _openai_chat.SPEC, _openai_responses.SPEC)
"""Every API, Anthropic's first: a body of its shape has Chat Completions' shape too,
so ``api_by_shape`` must ask it first."""

_BY_NAME: Final = {api.name: api for api in APIS}
_BY_SUFFIX: Final = tuple((api.path_suffix, api.name) for api in APIS)
"""Each API's path suffix and name, unpacked once: every exchange's URL is looked up."""

DEFAULT_PROVIDER: Final = "openai"
"""The provider a request goes to when no API claims it for its own (OpenAI-style)."""

MODEL_ENDPOINTS: Final = (*(api.path_suffix for api in APIS), "/completions", "/embeddings")
"""Paths a provider's base URL is followed by; what precedes one is the base URL's path
(``/chat/completions`` is tried before ``/completions``)."""


def api_named(name: str) -> ApiSpec | None:
    """The API of this name (``openai.chat``), or None for any other (``json``)."""
    return _BY_NAME.get(name)


def api_of_path(path: str) -> str | None:
    """The name of the model API a URL path belongs to, or None when it is no model call.

    OpenAI's Assistants API lists a thread's messages at ``/threads/{id}/messages``;
    that is not Anthropic Messages, so a path with ``/threads/`` is no model call.
    """
    path = path.rstrip("/")
    if "/threads/" in path:
        return None
    for suffix, name in _BY_SUFFIX:
        if path.endswith(suffix):
            return name
    return None


def api_by_shape(body: dict[str, Any], headers: Headers) -> str | None:
    """The name of the API a request on a path no API names is, by its body and headers
    (proxies and cloud endpoints with their own paths, Vertex ``:rawPredict``...)."""
    return next((api.name for api in APIS if api.claims_body(body, headers)), None)


def provider_of(path: str, headers: Mapping[str, str]) -> str:
    """Whose upstream a request (path; headers lower-cased) goes to: the provider of the
    first API that claims it, else ``DEFAULT_PROVIDER``."""
    return next(
        (api.provider for api in APIS if api.claims_request(path, headers)), DEFAULT_PROVIDER
    )


def base_url_of(url: str) -> str | None:
    """The base URL a model call's URL was made from (``http://h/v1`` of
    ``http://h/v1/chat/completions``), or None when its path ends in no model endpoint."""
    parts = urlsplit(url)
    for endpoint in MODEL_ENDPOINTS:
        if parts.path.endswith(endpoint):
            return urlunsplit((parts.scheme, parts.netloc, parts.path[: -len(endpoint)], "", ""))
    return None
