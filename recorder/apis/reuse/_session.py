"""Per-session reuse of request decoding, so a fold stays linear in the turns.

An agent's every request repeats the whole conversation.  Parsing each body
with ``json.loads`` and normalizing each message again costs time that grows
with the square of the turns.  ``BodyParser`` parses a session's request
bodies of one API in order: the leading conversation items whose JSON text is
unchanged from the previous body are taken over as the very same parsed
objects, and only the rest of the body is parsed.  The usual body (the one
before plus new items, the fields around them recurring or parsing on their
own) is read straight from its bytes by ``_reuse_quick``; any other by the
walk below, on its text.
``Memo`` then maps those objects to the adapter's normalized messages by
identity, so a message is normalized once per session.

The result is exactly what ``json.loads`` gives: anything the fast walk does
not follow (a body that is not a JSON object, invalid JSON, an unusual
encoding) is parsed by ``load_json``, which also words the problem.
"""

from __future__ import annotations

import bisect
import json
import operator
import re
from collections.abc import Callable
from itertools import accumulate, takewhile
from typing import Any, Generic, TypeVar

from ...tape._delta import DeltaBody
from .._bodies import load_json
from ._check import Chains
from ._quick import Key, Layout, quick

T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")

_WS = re.compile(r"[ \t\n\r]*")  # the whitespace JSON allows, as json.decoder skips it
_DECODER = json.JSONDecoder()
_CLOSED = (dict, list, str)
"""Parsed values whose text ends in a character that closes it (``}``, ``]``, ``"``)."""
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


_WS_CHARS = frozenset(" \t\n\r")


def _skip(s: str, pos: int) -> int:
    """Offset of the first character at or after ``pos`` that is not JSON whitespace."""
    if s[pos : pos + 1] not in _WS_CHARS:  # the usual case: no whitespace, or the end
        return pos
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
    """Where the items of the conversation array sat in the previous body.

    Offsets are relative to the array's ``[``, so a body whose conversation
    moved (a field such as ``"stream": true`` added or dropped before it)
    still reuses it.
    """

    def __init__(self, text: str, start: int, ends: list[int], items: list[Any]) -> None:
        self.text = text
        self.start = start  # offset of the array's "[" in text
        self.ends = ends  # offset just past each item, relative to start
        self.items = items  # the parsed items


def common_run(a: str, i: int, b: str, j: int) -> int:
    """Length of the longest common prefix of ``a[i:]`` and ``b[j:]``."""
    n = min(len(a) - i, len(b) - j)
    if n <= 0:
        return 0
    if b.startswith(a[i : i + n], j):
        return n
    lo, hi = 0, n
    # Invariant: a[i:i+lo] == b[j:j+lo] and a[i:i+hi] != b[j:j+hi].
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.startswith(a[i + lo : i + mid], j + lo):
            lo = mid
        else:
            hi = mid
    return lo


class BodyParser:
    """Parses one session's request bodies of one API, reusing what did not change.

    ``key`` names the top-level array holding the conversation (``messages``,
    ``input``): its leading items whose text is unchanged are taken over.  Any
    other top-level value whose text (and the character after it) is the same
    as in the previous body is taken over whole: the tool schemas, the system
    prompt.  Keeps the previous body's text and values: one body's worth of
    memory.
    """

    def __init__(self, key: str) -> None:
        self._key = key
        self._quick_key = Key.of(key)
        self._layout: Layout | None = None  # the previous body's, for ``quick``
        self.chains = Chains(self._quick_key)
        """The last few bodies loaded (with a token) or checked: ``_reuse_check``."""
        self._last: _Walk | None = None
        self._text = ""
        self._values: dict[str, tuple[int, int, Any]] = {}  # name -> (start, end, value)
        # Where the previous body's conversation array ended, and the top-level
        # values after it as (name, start, end, value); None if it had none.
        self._tail: tuple[int, list[tuple[str, int, int, Any]]] | None = None

    def load(
        self, data: bytes, what: str, token: bytes | DeltaBody | None = None
    ) -> tuple[Any, str]:
        """``(value, "")`` or ``(None, problem)``, as ``load_json(data, what)``.
        ``token``: what a later body stored as a delta of this one names as its base;
        given, the body's chain is kept for ``chains``."""
        # json.loads reads bytes starting with "{" and a non-NUL byte as UTF-8.
        if data[:1] == b"{" and data[1:2] != b"\x00":
            got = quick(self._quick_key, data, self._layout)
            if got is not None:
                value, layout = got
                self._layout = layout
                if token is not None:
                    self.chains.loaded(token, data, layout)
                return value, ""
            self._layout = None
            try:
                text = data.decode("utf-8", "surrogatepass")
                return self._object(text), ""
            except (UnicodeDecodeError, ValueError, RecursionError, _Malformed):
                pass  # json.JSONDecodeError is a ValueError
        self._last = None
        self._text, self._values, self._tail = "", {}, None
        return load_json(data, what)

    def _same(self, name: str, s: str, pos: int) -> tuple[Any, int] | None:
        """The previous body's value of ``name`` if its text recurs at ``pos``."""
        seen = self._values.get(name)
        if seen is None:
            return None
        start, end, value = seen
        # The character after the value is compared too: a number's parse
        # depends on it; nothing else's does.
        if s.startswith(self._text[start : end + 1], pos):
            return value, pos + end - start
        return None

    def _object(self, s: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        values: dict[str, tuple[int, int, Any]] = {}
        pos = _skip(s, 1)
        walked: _Walk | None = None
        after: list[tuple[str, int, int, Any]] | None = None  # values after the array
        ended = 0  # where the conversation array ended
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
                start = pos
                if name == self._key and s[pos : pos + 1] == "[":
                    value, pos, walked = self._array(s, pos)
                    out[name] = value
                    if after is None and self._rest_recurs(s, pos, out, values):
                        self._last = walked
                        self._text, self._values = s, values
                        return out
                    after, ended = [], pos
                else:
                    same = self._same(name, s, pos)
                    value, pos = _DECODER.raw_decode(s, pos) if same is None else same
                    values[name] = (start, pos, value)
                    if after is not None:
                        after.append((name, start, pos, value))
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
        self._text, self._values = s, values
        self._tail = (ended, after) if after is not None else None
        return out

    def _rest_recurs(
        self, s: str, pos: int, out: dict[str, Any], values: dict[str, tuple[int, int, Any]]
    ) -> bool:
        """If the text after the conversation array (ending at ``pos``) is the previous
        body's text after its array, take over the values there into ``out`` and
        ``values`` as the walk would set them, and return True."""
        tail = self._tail
        if tail is None:
            return False
        ended, after = tail
        if len(s) - pos != len(self._text) - ended or not s.endswith(self._text[ended:]):
            return False
        shift = pos - ended
        moved = [(name, a + shift, b + shift, value) for name, a, b, value in after]
        for name, a, b, value in moved:
            out[name] = value
            values[name] = (a, b, value)
        self._tail = (pos, moved)
        return True

    def _array(self, s: str, start: int) -> tuple[list[Any], int, _Walk]:
        items: list[Any] = []
        ends: list[int] = []
        pos = _skip(s, start + 1)
        last = self._last
        if last is not None and last.ends:
            # An item is the same if its text and the character after it are
            # unchanged: the parse up to there depends on nothing else.  The
            # character after matters only to a number, so an object, array or
            # string whose text ends where the common run does is the same too
            # (the last message of the previous body, now followed by a new one).
            whole = last.text[last.start : last.start + last.ends[-1]]
            if s.startswith(whole, start):  # the usual request: every item recurs
                same = len(whole)
            else:
                same = common_run(last.text, last.start, s, start)
            keep = bisect.bisect_left(last.ends, same)
            if (
                keep < len(last.ends)
                and last.ends[keep] == same
                and type(last.items[keep]) in _CLOSED
            ):
                keep += 1
            if keep:
                items = last.items[:keep]
                ends = last.ends[:keep]
                pos = start + ends[-1]
        if not items:
            if s[pos : pos + 1] == "]":
                return items, pos + 1, _Walk(s, start, ends, items)
            pos = self._item(s, pos, start, items, ends)
        while True:
            pos = _skip(s, pos)
            sep = s[pos : pos + 1]
            if sep == ",":
                pos = self._item(s, _skip(s, pos + 1), start, items, ends)
            elif sep == "]":
                return items, pos + 1, _Walk(s, start, ends, items)
            else:
                raise _Malformed

    @staticmethod
    def _item(s: str, pos: int, start: int, items: list[Any], ends: list[int]) -> int:
        value, end = _DECODER.raw_decode(s, pos)
        items.append(value)
        ends.append(end - start)
        return end


class Memo(Generic[T]):
    """Normalized forms of parsed items, by the items' identity, for one session.

    ``BodyParser`` hands unchanged items over as the same objects, so an
    identity hit means the same JSON text.  Holds the items, so their ids stay
    theirs for the memo's lifetime.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[object, T]] = {}
        self._items: list[Any] = []
        self._out: tuple[T, ...] = ()
        self._dicts: list[int] = [0]  # how many of the first i items are objects
        self._wholes: dict[int, tuple[object, Any]] = {}

    def each(self, items: list[Any], normalize: Callable[[Any], T]) -> tuple[T, ...]:
        """``normalize`` of each JSON object in ``items``, reusing the previous call's.

        The results for the leading items that are the previous call's very
        same objects (equal ones may differ in their text, 1 and 1.0) are taken
        over as one tuple, so a request costs only its new items rather than
        the whole conversation.
        """
        seen = self._items
        if all(map(operator.is_, items, seen)):  # the usual: all of them, checked in C
            same = min(len(items), len(seen))
        else:
            same = sum(1 for _ in takewhile(bool, map(operator.is_, items, seen)))
        head = self._out[: self._dicts[same]]
        rest = items[same:]
        out = head + tuple(self.get(m, normalize) for m in rest if isinstance(m, dict))
        self._dicts = self._dicts[: same + 1]
        self._dicts += accumulate((isinstance(m, dict) for m in rest), initial=self._dicts[-1])
        del self._dicts[same + 1 : same + 2]  # accumulate repeats its initial value first
        self._items, self._out = list(items), out
        return out

    def whole(self, value: V, derive: Callable[[V], U]) -> U:
        """``derive(value)``, computed once per value object (the tool schemas a
        request repeats, which ``BodyParser`` hands over as the same list)."""
        hit = self._wholes.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]  # type: ignore[no-any-return]
        out = derive(value)
        self._wholes = {id(value): (value, out)}  # the last one only: values recur in a row
        return out

    def get(self, item: object, normalize: Callable[[Any], T]) -> T:
        """``normalize(item)``, computed once per item object."""
        hit = self._seen.get(id(item))
        if hit is not None:
            return hit[1]
        value = normalize(item)
        self._seen[id(item)] = (item, value)
        return value
