"""Per-session reuse of request decoding, so a fold stays linear in the turns.

An agent's every request repeats the whole conversation.  Parsing each body
with ``json.loads`` and normalizing each message again costs time that grows
with the square of the turns.  ``BodyParser`` parses a session's request
bodies of one API in order: the leading conversation items whose JSON text is
unchanged from the previous body (same text, same offsets) are taken over as
the very same parsed objects, and only the rest of the body is parsed.
``Memo`` then maps those objects to the adapter's normalized messages by
identity, so a message is normalized once per session.

The result is exactly what ``json.loads`` gives: anything the fast walk does
not follow (a body that is not a JSON object, invalid JSON, an unusual
encoding) is parsed by ``load_json``, which also words the problem.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from _fold_reference._sse import load_json

T = TypeVar("T")

_WS = re.compile(r"[ \t\n\r]*")  # the whitespace JSON allows, as json.decoder skips it
_DECODER = json.JSONDecoder()
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _skip(s: str, pos: int) -> int:
    """Offset of the first character at or after ``pos`` that is not JSON whitespace."""
    m = _WS.match(s, pos)
    return m.end() if m is not None else pos


class _Malformed(Exception):
    """The walk met something it does not follow; ``load_json`` takes over."""


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two texts (binary search on slices)."""
    n = min(len(a), len(b))
    if b.startswith(a[:n]):
        return n
    lo, hi = 0, n
    # Invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi].
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.startswith(a[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


class _Walk:
    """Where the items of the conversation array sat in the previous body."""

    def __init__(self, text: str, start: int, ends: list[int], items: list[Any]) -> None:
        self.text = text
        self.start = start  # offset of the array's "["
        self.ends = ends  # offset just past each item
        self.items = items  # the parsed items


class BodyParser:
    """Parses one session's request bodies of one API, reusing unchanged leading items.

    ``key`` names the top-level array holding the conversation (``messages``,
    ``input``).  Keeps the previous body's text and items: one body's worth
    of memory.
    """

    def __init__(self, key: str) -> None:
        self._key = key
        self._last: _Walk | None = None

    def load(self, data: bytes, what: str) -> tuple[Any, str]:
        """``(value, "")`` or ``(None, problem)``, as ``load_json(data, what)``."""
        # json.loads reads bytes starting with "{" and a non-NUL byte as UTF-8.
        if data[:1] == b"{" and data[1:2] != b"\x00":
            try:
                text = data.decode("utf-8", "surrogatepass")
                return self._object(text), ""
            except (UnicodeDecodeError, ValueError, RecursionError, _Malformed):
                pass  # json.JSONDecodeError is a ValueError
        self._last = None
        return load_json(data, what)

    def _object(self, s: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        pos = _skip(s, 1)
        walked: _Walk | None = None
        if s[pos : pos + 1] == "}":
            pos += 1
        else:
            while True:
                if s[pos : pos + 1] != '"':
                    raise _Malformed
                name, pos = _scanstring(s, pos + 1)
                pos = _skip(s, pos)
                if s[pos : pos + 1] != ":":
                    raise _Malformed
                pos = _skip(s, pos + 1)
                if name == self._key and s[pos : pos + 1] == "[":
                    value, pos, walked = self._array(s, pos)
                else:
                    value, pos = _DECODER.raw_decode(s, pos)
                out[name] = value
                pos = _skip(s, pos)
                sep = s[pos : pos + 1]
                if sep == ",":
                    pos = _skip(s, pos + 1)
                elif sep == "}":
                    pos += 1
                    break
                else:
                    raise _Malformed
        if _skip(s, pos) != len(s):
            raise _Malformed
        self._last = walked
        return out

    def _array(self, s: str, start: int) -> tuple[list[Any], int, _Walk]:
        items: list[Any] = []
        ends: list[int] = []
        pos = _skip(s, start + 1)
        last = self._last
        if last is not None and last.start == start and last.ends:
            # An item is the same if its text and the character after it are
            # unchanged: the parse up to there depends on nothing else.
            same = common_prefix(last.text, s)
            keep = bisect.bisect_left(last.ends, same)
            if keep:
                items = last.items[:keep]
                ends = last.ends[:keep]
                pos = ends[-1]
        if not items:
            if s[pos : pos + 1] == "]":
                return items, pos + 1, _Walk(s, start, ends, items)
            pos = self._item(s, pos, items, ends)
        while True:
            pos = _skip(s, pos)
            sep = s[pos : pos + 1]
            if sep == ",":
                pos = self._item(s, _skip(s, pos + 1), items, ends)
            elif sep == "]":
                return items, pos + 1, _Walk(s, start, ends, items)
            else:
                raise _Malformed

    @staticmethod
    def _item(s: str, pos: int, items: list[Any], ends: list[int]) -> int:
        value, end = _DECODER.raw_decode(s, pos)
        items.append(value)
        ends.append(end)
        return end


class Memo(Generic[T]):
    """Normalized forms of parsed items, by the items' identity, for one session.

    ``BodyParser`` hands unchanged items over as the same objects, so an
    identity hit means the same JSON text.  Holds the items, so their ids stay
    theirs for the memo's lifetime.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[object, T]] = {}

    def get(self, item: object, normalize: Callable[[Any], T]) -> T:
        """``normalize(item)``, computed once per item object."""
        hit = self._seen.get(id(item))
        if hit is not None:
            return hit[1]
        value = normalize(item)
        self._seen[id(item)] = (item, value)
        return value
