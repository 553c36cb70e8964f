"""A checked request body's pieces (``Chain``), and the checks of its parts.

``_reuse_check`` keeps a ``Chain`` for each body it checked: where the
conversation array opens, where its items end, where its tail starts, and the
bytes a later delta may copy (its opening, its items' last bytes, its tail
texts).  The parts a delta adds are checked here without being parsed: by
msgspec's skip, then UTF-8 and Python's digit limit (``_valid_items``,
``_valid_object``), or as new items and a tail (``_items_end``).
"""

from __future__ import annotations

import msgspec

from ...tape._delta import DeltaBody
from .._bodies import huge_int
from ._quick import _MEMBERS, _NOT_WS, _WS, RECENT_TAILS, Key

_COMMA, _CLOSE = ord(","), ord("]")
ENDING = 64
"""Bytes a chain keeps of its items' end: a delta with copies often takes the end of the
last item from the base's suffix, after the new bytes."""
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW = msgspec.json.Decoder(msgspec.Raw)
"""Checks a whole text by skipping it, keeping nothing."""


class Chain:
    """A checked body's pieces, and the body as the tape knows it (``token``: bytes, or
    the ``DeltaBody`` a later delta names as its base)."""

    __slots__ = (
        "ending",
        "head",
        "kept",
        "length",
        "opening",
        "start",
        "tail",
        "tails",
        "token",
    )

    def __init__(
        self,
        token: bytes | DeltaBody,
        head: int,
        start: int,
        kept: int,
        tail: int,
        length: int,
        opening: bytes,
        ending: bytes,
        tails: tuple[bytes, ...],
    ) -> None:
        self.token = token
        self.head = head  # body[:head] is "{" and the members before the array, with a comma
        self.start = start  # offset of the conversation array's "["
        self.kept = kept  # offset just past its last item (start + 1 if it has none)
        self.tail = tail  # offset of its "]": body[tail:] is tails[0]
        self.length = length
        self.opening = opening  # body[: start + 1]: the members before the array, and "["
        self.ending = ending  # body[kept - len(ending) : kept]: the items' last few bytes
        self.tails = tails  # this body's tail text first, then the last few other ones


def _head(before: bytes) -> int | None:
    """The length of ``before``, the text before a body's conversation key ("{" and the
    members before it, with their comma), if ``json.loads`` reads those members."""
    if before == b"{":
        return 1
    if before.endswith(b",") and _valid_object(before[:-1] + b"}"):
        return len(before)
    return None


def _items_end(
    key: Key, data: bytes, at: int, taken: bool, last: Chain | None
) -> tuple[int, int, bytes] | None:
    """``(kept, tail, tail text)``: where ``data``'s conversation items end and its tail
    starts, if what follows ``at`` is valid new items and a tail; else None.  ``at`` is
    just past items taken over as checked (``taken``: new ones then need a comma
    first), else just past the array's ``[``."""
    resume, comma = at, False
    if taken:
        after = _NOT_WS.search(data, at)
        if after is None:
            return None
        mark = data[after.start()]
        if mark == _COMMA:
            resume, comma = after.start() + 1, True
        elif mark != _CLOSE:  # a number that grew, or anything else
            return None
    ended = _rest(key, data, resume, comma, last)
    if ended is None:
        return None
    tail, text = ended
    kept = tail  # just past the last new item, else ``at`` (no new items: resume == at)
    while kept > resume and data[kept - 1] in _WS:
        kept -= 1
    return kept, tail, text


def _rest(
    key: Key, data: bytes, resume: int, comma: bool, last: Chain | None
) -> tuple[int, bytes] | None:
    """``(offset of the array's "]", the tail's text)`` if ``data[resume:]`` is valid new
    items (after a comma if ``comma``) and a tail, one seen lately or members that
    parse; else None."""
    for known in last.tails if last is not None else ():
        tail = len(data) - len(known)
        if tail >= resume and data.endswith(known):
            items = data[resume:tail].strip(_WS)
            if (items or comma) and not _valid_items(b"," + items if comma else items, comma):
                return None
            return tail, known
    # The new items and the tail's members, skipped in one parse (``_reuse_quick``).
    rest = data[resume:]
    members = _MEMBERS.decode(key.prefix + rest)
    raw = bytes(members.pop(key.name))
    tail = resume + len(raw) - 2
    if not data.startswith(memoryview(raw)[1:], resume) or (
        data.find(key.quoted, tail) >= 0 and key.again.search(data, tail)
    ):
        return None
    if (comma and not _RAW_ITEMS.decode(raw)) or huge_int(rest):
        return None
    rest.decode("utf-8", "surrogatepass")
    return tail, data[tail:]


def _tails(text: bytes, last: Chain | None) -> tuple[bytes, ...]:
    others = tuple(t for t in last.tails if t != text) if last is not None else ()
    return (text, *others[: RECENT_TAILS - 1])


def _valid_items(items: bytes, comma: bool) -> bool:
    """True if ``items`` (stripped, not empty) are conversation items ``json.loads``
    reads: one or more values, after a comma if ``comma`` (items came before)."""
    if comma and items[:1] != b",":
        return False
    # "[0,new...]": a valid item before, for the comma (one copy of the items)
    try:
        _RAW.decode(b"".join((b"[0" if comma else b"[", items, b"]")))
        if not items.isascii():  # (ASCII is UTF-8)
            items.decode("utf-8", "surrogatepass")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return not huge_int(items)


def _valid_object(text: bytes) -> bool:
    """True if ``text`` is a JSON object ``json.loads`` reads."""
    try:
        _RAW_OBJECT.decode(text)
        if not text.isascii():
            text.decode("utf-8", "surrogatepass")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return not huge_int(text)
