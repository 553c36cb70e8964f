"""Semantic request matching: normalize, compare, explain the first difference.

A request is reduced to its meaning before it is compared: method, URL path,
sorted query, the headers that can change an answer, and the body parsed as
JSON with key order ignored.  Per API, a few fields are dropped or folded
because they never change what the model is asked: each API's module in
``recorder/apis`` lists them (``ApiSpec.dropped``, with the reason) and folds
them (``ApiSpec.normalise``).  Host and scheme are ignored, so a tape
recorded against one base URL replays under any other.
``first_difference`` names the first JSON path where two requests differ;
``_matcher.Matcher`` uses both to hand recorded exchanges out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlsplit

import attrs

from evaltape.recorder import Exchange
from evaltape.recorder._shared import api_named, api_of_path, without_defaults

IGNORED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "user-agent",
        "idempotency-key",
        "content-length",
        "host",
        "accept-encoding",
        "connection",
        "traceparent",
        "tracestate",
        "baggage",
        "x-request-id",
        "x-client-request-id",
        "openai-organization",
        "openai-project",
    }
)
"""Headers that never change a model's answer: credentials (redacted on the
tape anyway), transport details, client identity and trace propagation."""

IGNORED_HEADER_PREFIXES = ("x-stainless-",)
"""SDK telemetry headers (OS, runtime, retry count, timeout) vary per machine."""

_REDACTED = re.compile(r"redacted", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def api_of(path: str) -> str:
    """Which API a URL path belongs to: openai.chat, openai.responses, anthropic.messages,
    or json for anything else (the recorder's table, ``api_of_path``)."""
    return api_of_path(path) or "json"


def _canonical_float(text: str) -> float | int:
    """A JSON number with a fraction or exponent; integral ones become ints (1.0 == 1)."""
    value = float(text)
    return int(value) if value.is_integer() else value


def parse_json(body: bytes) -> Any:
    """``json.loads`` with integral floats as ints, done while parsing (one pass)."""
    return json.loads(body, parse_float=_canonical_float)


def _canonical_numbers(value: Any) -> Any:
    """Integral floats become ints (JSON does not tell 1 from 1.0); recurse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_numbers(v) for v in value]
    return value


def normalize_body(api: str, body: Any) -> Any:
    """The semantic form of a parsed JSON body for ``api`` (see module docs): the API's
    own ``ApiSpec.normalise``, or only defaults dropped for an API evaltape does not know.

    ``body`` comes from ``parse_json``, which made integral floats ints.
    """
    if not isinstance(body, dict) or api == "json":
        return body
    spec = api_named(api)
    return spec.normalise(body) if spec is not None else without_defaults(body)


@attrs.frozen(kw_only=True)
class Normalized:
    """A request reduced to what matching compares."""

    method: str
    """HTTP method, upper case."""
    path: str
    """URL path (host, scheme and port are ignored)."""
    query: tuple[tuple[str, str], ...]
    """Query parameters sorted by name (values of one name keep their order)."""
    headers: tuple[tuple[str, str], ...]
    """Compared headers, sorted by name."""
    api: str
    """Which API the path belongs to, or "json" / "raw"."""
    body: Any
    """Normalized JSON body, or raw bytes when the body is not JSON."""
    key: str
    """Digest of all of the above: equal keys mean identical requests."""

    @property
    def endpoint(self) -> str:
        """``METHOD /path``."""
        return f"{self.method} {self.path}"


def _header_ignored(name: str, value: str, extra: frozenset[str]) -> bool:
    return (
        name in IGNORED_HEADERS
        or name in extra
        or name.startswith(IGNORED_HEADER_PREFIXES)
        or bool(_REDACTED.search(value))
    )


def _head(
    url: str, headers: Iterable[tuple[str, str]], ignore_headers: frozenset[str]
) -> tuple[SplitResult, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The URL's parts, its sorted query, and the compared headers, sorted."""
    parts = urlsplit(url)
    query = tuple(sorted(parse_qsl(parts.query, keep_blank_values=True), key=lambda kv: kv[0]))
    merged: dict[str, str] = {}
    for name, value in headers:
        name = name.lower()
        if not _header_ignored(name, value, ignore_headers):
            merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return parts, query, tuple(sorted(merged.items()))


def exact_key(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    ignore_headers: frozenset[str] = frozenset(),
) -> str:
    """Digest of a request's compared parts with its body bytes as they are.

    ``normalize`` is a function of exactly these parts, so two requests with
    equal exact keys have equal normalized keys: a replay can look up a
    byte-identical request without parsing its body.
    """
    parts, query, kept = _head(url, headers, ignore_headers)
    digest = hashlib.sha256(json.dumps([method.upper(), parts.path, query, kept]).encode())
    digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


def normalize(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    ignore_headers: frozenset[str] = frozenset(),
) -> Normalized:
    """Reduce a request to its meaning (see the module docs for the rules)."""
    parts, query, kept = _head(url, headers, ignore_headers)
    api = api_of(parts.path)
    parsed: Any
    try:
        parsed = normalize_body(api, parse_json(body)) if body else None
        canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        api, parsed = "raw", bytes(body)
        canonical = hashlib.sha256(body).hexdigest()
    text = json.dumps([method.upper(), parts.path, query, kept, canonical], ensure_ascii=False)
    return Normalized(
        method=method.upper(),
        path=parts.path,
        query=query,
        headers=kept,
        api=api,
        body=parsed,
        key=hashlib.sha256(text.encode()).hexdigest(),
    )


def normalize_exchange(
    exchange: Exchange, ignore_headers: frozenset[str] = frozenset()
) -> Normalized:
    """The normalized form of a recorded exchange's request."""
    r = exchange.request
    return normalize(r.method, r.url, r.headers, r.body, ignore_headers=ignore_headers)


# -- explaining differences ---------------------------------------------------

MAX_SHOWN = 80
"""Characters of a value shown in a divergence message."""


def path_step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENT.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def show(value: Any, around: int = 0) -> str:
    """A value as compact JSON, shortened to about ``MAX_SHOWN`` characters.

    For long strings the window starts a little before offset ``around``
    (where two strings start to differ), so the difference stays visible.
    """
    if value is _MISSING:
        return "<absent>"
    if isinstance(value, bytes):
        text = repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) <= MAX_SHOWN:
        return text
    start = max(0, around - 20)
    piece = text[start : start + MAX_SHOWN]
    return ("…" if start else "") + piece + ("…" if start + MAX_SHOWN < len(text) else "")


_MISSING = object()


@attrs.frozen(kw_only=True)
class Difference:
    """The first place two requests differ."""

    path: str
    """JSON path in the body (``messages[5].content``), or method/path/query/header."""
    sent: str
    """The new request's value, shortened."""
    recorded: str
    """The recorded request's value, shortened."""


def _shown_pair(a: Any, b: Any, path: str) -> Difference:
    around = 0
    if isinstance(a, str) and isinstance(b, str):
        same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        around = (min(len(a), len(b)) if same is None else same) + 1  # + the opening quote
    return Difference(path=path, sent=show(a, around), recorded=show(b, around))


def first_difference_in(sent: Any, recorded: Any, path: str = "") -> Difference | None:
    """The first JSON path where two values differ, walking in the sent order."""
    if isinstance(sent, dict) and isinstance(recorded, dict):
        for key in [*sent, *(k for k in recorded if k not in sent)]:
            found = first_difference_in(
                sent.get(key, _MISSING), recorded.get(key, _MISSING), path_step(path, key)
            )
            if found is not None:
                return found
        return None
    if isinstance(sent, list) and isinstance(recorded, list):
        for i in range(max(len(sent), len(recorded))):
            a = sent[i] if i < len(sent) else _MISSING
            b = recorded[i] if i < len(recorded) else _MISSING
            found = first_difference_in(a, b, path_step(path, i))
            if found is not None:
                return found
        return None
    if sent == recorded and type(sent) is type(recorded):
        return None
    return _shown_pair(sent, recorded, path or "<body>")


def first_difference(sent: Normalized, recorded: Normalized) -> Difference | None:
    """Where two normalized requests first differ, or None if they are identical."""
    if sent.method != recorded.method:
        return _shown_pair(sent.method, recorded.method, "method")
    if sent.path != recorded.path:
        return _shown_pair(sent.path, recorded.path, "path")
    if sent.query != recorded.query:
        found = first_difference_in(dict(sent.query), dict(recorded.query), "query")
        return found or _shown_pair(list(sent.query), list(recorded.query), "query")
    if sent.headers != recorded.headers:
        a, b = dict(sent.headers), dict(recorded.headers)
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                return _shown_pair(a.get(name, _MISSING), b.get(name, _MISSING), f"header {name}")
    return first_difference_in(sent.body, recorded.body)


# -- what a lenient replay reports ------------------------------------------


@attrs.frozen(kw_only=True)
class Divergence:
    """A request served in lenient mode although it did not match exactly."""

    ordinal: int
    """The request's 1-based ordinal in this replay."""
    served: int
    """1-based ordinal of the recorded request whose response was served (0: none)."""
    message: str
    """The error strict mode would have raised."""
    error: Exception | None = attrs.field(default=None, eq=False, repr=False)
    """That error itself (``Diverged`` or ``Exhausted``), when it was made."""
