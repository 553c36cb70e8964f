"""One proxy endpoint per provider, each forwarding only to its own API with its own key.

A program that talks to two providers (OpenAI and Anthropic, or a gateway
named by the user) gets one ``TapeProxy`` per provider, all feeding the same
transport: ``OPENAI_BASE_URL`` points at one, ``ANTHROPIC_BASE_URL`` at
another, ``<NAME>_BASE_URL`` at each extra one.  A request reaches only the
upstream of the endpoint it was sent to, so an Anthropic key never travels
to OpenAI's host.  As a second guard, an endpoint refuses (HTTP 421, not
retried, never forwarded nor recorded) a request whose headers carry
another provider's key from the program's environment.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import attrs
import httpx

from ._errors import error_body
from ._forward import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, Upstreams
from ._server import ProxyTransport, TapeProxy

MISROUTED_STATUS = 421
"""Status of the answer to a request carrying another provider's key (Misdirected Request)."""
PLACEHOLDER_KEY = "evaltape-replay"
"""The API key every provider's SDK is given in replay, where a tape needs none."""

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_MIN_KEY = 8
"""Shorter values are not treated as keys (an empty or toy setting matches too much)."""


class RouteError(ValueError):
    """An ``--upstream NAME=URL`` that cannot be used."""


@attrs.frozen(kw_only=True)
class Route:
    """One provider: where its requests go live and what its SDKs are told."""

    name: str
    """Lower-case provider name: ``openai``, ``anthropic`` or one the user adds."""
    upstream: str
    """The provider's base URL as its SDK takes it (``https://api.openai.com/v1``)."""

    @property
    def env_prefix(self) -> str:
        """``OPENAI`` for ``openai``: the variables are ``<PREFIX>_BASE_URL`` and ``_API_KEY``."""
        return self.name.upper()

    @property
    def base_url_var(self) -> str:
        """The variable naming the proxy endpoint, e.g. ``ANTHROPIC_BASE_URL``."""
        return self.env_prefix + "_BASE_URL"

    @property
    def key_var(self) -> str:
        """The variable holding the provider's key, e.g. ``ANTHROPIC_API_KEY``."""
        return self.env_prefix + "_API_KEY"

    @property
    def path(self) -> str:
        """The upstream URL's path, kept on the proxy's side (``/v1``, ``/openai/v1``)."""
        path = urlsplit(self.upstream).path.rstrip("/")
        # OpenAI SDKs' paths never carry /v1, the proxy's requests always do.
        return path if path or self.name != "openai" else "/v1"

    @property
    def origin(self) -> str:
        """Scheme, host and port of the upstream: the requests' paths are kept whole."""
        parts = urlsplit(self.upstream)
        return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def parse_route(text: str) -> Route:
    """``NAME=URL`` (``groq=https://api.groq.com/openai/v1``) as a ``Route``."""
    name, sep, url = text.partition("=")
    name = name.strip().lower()
    url = url.strip()
    if not sep or not _NAME.match(name):
        raise RouteError(
            f"{text!r}: expected NAME=URL with a name of letters, digits "
            "and underscores (e.g. groq=https://api.groq.com/openai/v1)"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RouteError(f"{text!r}: {url!r} is not an http(s) URL")
    return Route(name=name, upstream=url.rstrip("/"))


def agent_routes(
    openai: str = OPENAI_UPSTREAM + "/v1",
    anthropic: str = ANTHROPIC_UPSTREAM,
    extra: Iterable[Route] = (),
) -> tuple[Route, ...]:
    """OpenAI's and Anthropic's routes and the user's; a user route of the same name wins."""
    routes = {"openai": Route(name="openai", upstream=openai.rstrip("/"))}
    routes["anthropic"] = Route(name="anthropic", upstream=anthropic.rstrip("/"))
    for route in extra:
        routes[route.name] = route
    return tuple(routes.values())


def _foreign_keys(route: Route, routes: Sequence[Route], env: Mapping[str, str]) -> frozenset[str]:
    """The other providers' keys in ``env`` that are not also this provider's."""
    own = env.get(route.key_var, "")
    keys = {env.get(r.key_var, "") for r in routes if r.name != route.name}
    return frozenset(k for k in keys if len(k) >= _MIN_KEY and k != own)


class KeyGuard:
    """Refuses a request carrying another provider's key; passes the rest to ``transport``."""

    def __init__(self, route: Route, transport: ProxyTransport, foreign: frozenset[str]) -> None:
        self.route = route
        self.transport = transport
        self.foreign = foreign
        self._foreign_bytes = tuple(key.encode() for key in foreign)
        self.refused: list[str] = []
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Forward ``request`` unless its headers, URL or body hold a foreign key."""
        where = self._foreign_key_in(request)
        if where is None:
            return self.transport.handle_request(request)
        message = (
            f"refused a request to the {self.route.name} endpoint carrying another "
            f"provider's API key in {where} (point that SDK at its own *_BASE_URL)"
        )
        with self._lock:
            self.refused.append(message)
        return httpx.Response(
            MISROUTED_STATUS,
            headers={"content-type": "application/json", "x-should-retry": "false"},
            content=error_body("evaltape_misrouted_key", message),
        )

    def _foreign_key_in(self, request: httpx.Request) -> str | None:
        """Where ``request`` carries a foreign key (``its x-api-key header``), or None.

        Keys are letters, digits, ``-`` and ``_``, so JSON escaping never hides one in
        a body; a query string is also read percent-decoded (``?key=sk%2Dant...``).
        """
        if not self.foreign:
            return None
        for name, value in request.headers.items():
            if any(key in value for key in self.foreign):
                return f"its {name} header"
        target = request.url.raw_path.decode("ascii", "replace")
        decoded = unquote_plus(target)
        if any(key in target or key in decoded for key in self.foreign):
            return "its URL"
        body = request.read()
        if body and any(key in body for key in self._foreign_bytes):
            return "its body"
        return None


class RoutedProxies:
    """One started ``TapeProxy`` per route over one transport; ``env()`` points SDKs at them.

    ``environ`` is the program's environment (its keys decide what each
    endpoint refuses).  ``listen`` optionally gives each proxy a listening
    socket made elsewhere (a network namespace), in route order.
    """

    def __init__(
        self,
        transport: ProxyTransport,
        routes: Sequence[Route],
        *,
        environ: Mapping[str, str],
        replaying: bool,
        timeout: float,
        listen: Sequence[socket.socket] = (),
    ) -> None:
        self.routes = tuple(routes)
        self.replaying = replaying
        self.guards = [KeyGuard(r, transport, _foreign_keys(r, routes, environ)) for r in routes]
        sockets: list[Any] = list(listen) or [None] * len(routes)
        self.proxies = [
            TapeProxy(
                guard,
                upstreams=Upstreams.single(route.origin),
                timeout=timeout,
                listen=sock,
            )
            for route, guard, sock in zip(self.routes, self.guards, sockets, strict=True)
        ]

    def __enter__(self) -> RoutedProxies:
        with contextlib.ExitStack() as stack:
            for proxy in self.proxies:
                stack.enter_context(proxy)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def env(self) -> dict[str, str]:
        """``<NAME>_BASE_URL`` per route; placeholder ``<NAME>_API_KEY`` values in replay."""
        out: dict[str, str] = {}
        for route, proxy in zip(self.routes, self.proxies, strict=True):
            out[route.base_url_var] = proxy.url + route.path
            if self.replaying:
                out[route.key_var] = PLACEHOLDER_KEY
        return out

    @property
    def refused(self) -> list[str]:
        """Every request refused for carrying another provider's key, by route order."""
        return [message for guard in self.guards for message in guard.refused]
