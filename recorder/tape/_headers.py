"""HTTP headers stored as references into a per-session table of pairs.

Every exchange of a session sends nearly the same headers.  Each session has
a table of ``(name, value)`` pairs: it starts as ``STATIC`` (pairs and names
common in model API traffic) and grows by every pair the session stores that
it does not hold yet, up to ``MAX_TABLE`` entries.  A header is stored as

- an int ``i``: the pair ``table[i]``;
- ``[i, value]``: the name of ``table[i]`` with another value;
- ``[name, value]``: anything else;
- ``true``: ``content-length`` with the decimal length of the body it comes
  with (the request body, or the response's joined chunks).

Request and response headers share the table, in event order (request before
response).  See docs/format.md, "Compact exchanges".
"""

from __future__ import annotations

from typing import Any

Headers = tuple[tuple[str, str], ...]

STATIC: tuple[tuple[str, str], ...] = (
    ("accept", "application/json"),
    ("accept", "*/*"),
    ("accept", "text/event-stream"),
    ("accept-encoding", "gzip, deflate"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-encoding", "gzip, deflate, zstd"),
    ("connection", "keep-alive"),
    ("content-type", "application/json"),
    ("content-type", "text/event-stream; charset=utf-8"),
    ("content-type", "text/event-stream"),
    ("content-type", "application/json; charset=utf-8"),
    ("transfer-encoding", "chunked"),
    ("cache-control", "no-cache"),
    ("authorization", "[REDACTED]"),
    ("x-api-key", "[REDACTED]"),
    ("x-stainless-lang", "python"),
    ("x-stainless-lang", "js"),
    ("x-stainless-os", "Linux"),
    ("x-stainless-os", "MacOS"),
    ("x-stainless-os", "Windows"),
    ("x-stainless-arch", "x64"),
    ("x-stainless-arch", "arm64"),
    ("x-stainless-runtime", "CPython"),
    ("x-stainless-runtime", "node"),
    ("x-stainless-async", "false"),
    ("x-stainless-async", "async:asyncio"),
    ("x-stainless-retry-count", "0"),
    ("x-stainless-read-timeout", "600.0"),
    ("x-stainless-read-timeout", "600"),
    ("x-stainless-timeout", "NOT_GIVEN"),
    ("x-stainless-timeout", "600"),
    ("x-stainless-package-version", ""),
    ("x-stainless-runtime-version", ""),
    ("anthropic-version", "2023-06-01"),
    ("anthropic-beta", ""),
    ("openai-beta", ""),
    ("openai-version", "2020-10-01"),
    ("openai-organization", ""),
    ("openai-project", ""),
    ("openai-processing-ms", ""),
    ("host", ""),
    ("content-length", ""),
    ("user-agent", ""),
    ("date", ""),
    ("server", ""),
    ("x-request-id", ""),
    ("request-id", ""),
    ("x-ratelimit-limit-requests", ""),
    ("x-ratelimit-limit-tokens", ""),
    ("x-ratelimit-remaining-requests", ""),
    ("x-ratelimit-remaining-tokens", ""),
    ("x-ratelimit-reset-requests", ""),
    ("x-ratelimit-reset-tokens", ""),
    ("server", "cloudflare"),
    ("cf-ray", ""),
    ("cf-cache-status", "DYNAMIC"),
    ("content-encoding", "gzip"),
    ("content-encoding", "br"),
    ("vary", "Accept-Encoding"),
    ("x-content-type-options", "nosniff"),
    ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
    ("alt-svc", 'h3=":443"; ma=86400'),
    ("access-control-expose-headers", "X-Request-ID"),
)
"""The pairs every session's table starts with (part of the format: never change)."""

MAX_TABLE = 4096
"""Most pairs a session's table holds; later new pairs are stored without being added."""


_STATIC_LENS = [len(name) + len(value) for name, value in STATIC]
_STATIC_INDEX: dict[tuple[str, str], int] = {}
_STATIC_NAMES: dict[str, int] = {}
for _i, _pair in enumerate(STATIC):
    _STATIC_INDEX.setdefault(_pair, _i)
    _STATIC_NAMES.setdefault(_pair[0], _i)
del _i, _pair


class HeaderTable:
    """One session's table; the writer and the reader each keep one, in step."""

    def __init__(self) -> None:
        self._pairs: list[tuple[str, str]] = list(STATIC)
        self._lens = list(_STATIC_LENS)
        self._index = dict(_STATIC_INDEX)
        self._names = dict(_STATIC_NAMES)
        self._seen: dict[
            tuple[tuple[Any, ...], tuple[type, ...]], tuple[Headers, int, tuple[int, ...]]
        ] = {}
        """Stored header lists of table entries already read (an exchange repeats its
        predecessor's), with their pairs, text and where content lengths stand."""

    def mark(self) -> int:
        """A point to go back to with ``rollback`` (an event that was not written)."""
        return len(self._pairs)

    def rollback(self, mark: int) -> None:
        """Forget the pairs added since ``mark``."""
        for i in range(len(self._pairs) - 1, mark - 1, -1):
            pair = self._pairs.pop()
            self._lens.pop()
            del self._index[pair]
            if self._names.get(pair[0]) == i:
                del self._names[pair[0]]

    def _add(self, pair: tuple[str, str]) -> None:
        if len(self._pairs) < MAX_TABLE and pair not in self._index:
            self._index[pair] = len(self._pairs)
            self._names.setdefault(pair[0], len(self._pairs))
            self._pairs.append(pair)
            self._lens.append(len(pair[0]) + len(pair[1]))

    def encode(self, headers: Any, length: int) -> list[Any]:
        """The stored form of a header list (pairs as lists or tuples of two str)
        that comes with a body of ``length`` bytes."""
        out: list[Any] = []
        own = str(length)
        for name, value in headers:
            if name == "content-length" and value == own:
                out.append(True)
                continue
            pair = (name, value)
            i = self._index.get(pair)
            if i is not None:
                out.append(i)
                continue
            n = self._names.get(name)
            out.append([name, value] if n is None else [n, value])
            self._add(pair)
        return out

    def decode(self, stored: Any, length: int) -> tuple[list[list[str]], int]:
        """The header list (plain form) a stored one coming with a body of ``length``
        bytes stands for, and the characters of its names and values; ``ValueError``
        if malformed."""
        pairs, text = self.pairs(stored, length)
        return [list(pair) for pair in pairs], text

    def pairs(self, stored: Any, length: int) -> tuple[Headers, int]:
        """``decode``'s headers as the pairs an event holds (what a reader builds)."""
        if type(stored) is not list:
            raise ValueError("compact headers are not a list")
        # Keyed by the items and their types: 1, 1.0 and True are equal keys otherwise.
        types = tuple(map(type, stored))
        seen = self._seen.get((tuple(stored), types)) if list not in types else None
        if seen is not None:
            out, text, sized = seen
            if not sized:
                return out, text
            own = str(length)
            headers = list(out)
            for at in sized:
                headers[at] = ("content-length", own)
            return tuple(headers), text + len(sized) * (14 + len(own))
        pairs, text = self._pairs_of(stored, length)
        if list not in types and len(self._seen) < MAX_TABLE:
            sized = tuple(at for at, kind in enumerate(types) if kind is bool)
            lengths = len(sized) * (14 + len(str(length)))
            self._seen[(tuple(stored), types)] = (pairs, text - lengths, sized)
        return pairs, text

    def _pairs_of(self, stored: list[Any], length: int) -> tuple[Headers, int]:
        pairs, lens = self._pairs, self._lens
        # One loop: on lists this short it beats map() passes, which pay a call a header.
        out: list[tuple[str, str]] = []
        text = 0
        known = len(pairs)
        for item in stored:
            if type(item) is int:
                if not 0 <= item < known:
                    raise ValueError(f"header refers to table entry {item} of {known}")
                out.append(pairs[item])
                text += lens[item]
                continue
            if item is True:
                own = str(length)
                out.append(("content-length", own))
                text += 14 + len(own)
                continue
            if type(item) is not list or len(item) != 2 or type(item[1]) is not str:
                raise ValueError("a compact header is not an index or [name, value]")
            name, value = item
            if type(name) is int:
                if not 0 <= name < known:
                    raise ValueError(f"header name refers to table entry {name} of {known}")
                name = pairs[name][0]
            elif type(name) is not str:
                raise ValueError("a compact header name is not a str or an index")
            pair = (name, value)
            out.append(pair)
            size = len(name) + len(value)
            text += size
            if known < MAX_TABLE and pair not in self._index:  # (``_add``, in line)
                self._index[pair] = known
                self._names.setdefault(name, known)
                pairs.append(pair)
                lens.append(size)
                known += 1
        return tuple(out), text
