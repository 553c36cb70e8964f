"""Whether a request body is valid JSON, decided from what changed, without parsing it.

Folding a session needs to know at once whether each request body is one
``json.loads`` reads (a body that is not is the call's error); its values are
needed only when the request side is read (``CallDecoder``).  So a session's
bodies of one API are *checked* in order, each against one of the last few
checked before it (its ``Chain``: where its conversation array's items end and
its tail starts, and the tail texts seen lately):

- ``follow``: a body the tape stores as a delta (``base[:prefix] + middle +
  base[len(base) - suffix:]``) whose base has a chain, whose prefix reaches past
  the base's last conversation item and whose suffix covers the base's tail,
  is the base with ``middle`` (and only whitespace) where the items end.  It is
  valid exactly when ``middle`` holds nothing, or a comma and new items that
  parse; the body is never built.  A delta with copies from its base (a field
  dropped or added around the conversation) is followed from its pieces when
  a copy holds the conversation and the others come from what the chain keeps
  of the base: its opening up to ``[``, its items' last bytes, its tail.
- ``check``: any other body, from its bytes, as ``_reuse_quick.quick`` walks it
  (the head and the conversation's leading items recurring, a tail seen lately
  or members that parse), with the new parts checked instead of parsed.

A part is checked by msgspec's parser skipping it, which checks every token,
escape and nesting level, then its UTF-8 and Python's digit limit, which the
skip leaves.  msgspec refuses what ``json.loads`` accepts in a few cases (NaN, a
lone surrogate escape): the caller then parses the body the general way, so a
check never calls valid what ``json.loads`` refuses, nor the other way round.
The pieces are cut at ASCII characters (``[``, ``,``, ``]``, whitespace), so
checking each one's UTF-8 checks the body's.
"""

from __future__ import annotations

import msgspec

from evaltape.recorder._adapters._json_fast import huge_int
from evaltape.recorder._adapters._reuse_quick import (
    _MEMBERS,
    _NOT_WS,
    _WS,
    RECENT_TAILS,
    Key,
    Layout,
)
from evaltape.recorder._delta import DeltaBody, bytes_of

_COMMA, _CLOSE = ord(","), ord("]")
ENDING = 64
"""Bytes a chain keeps of its items' end: a delta with copies often takes the end of the
last item from the base's suffix, after the new bytes."""
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW = msgspec.json.Decoder(msgspec.Raw)
"""Checks a whole text by skipping it, keeping nothing."""


class Chains:
    """The chains of the last few bodies of one API that a session's parser loaded or
    checked: the tape's deltas name one of the last few bodies as their base."""

    KEEP = 4

    def __init__(self, key: Key) -> None:
        self._key = key
        self._chains: list[Chain] = []

    def loaded(self, token: bytes | DeltaBody, data: bytes, layout: Layout) -> None:
        """Keep the chain of a body ``_reuse_quick.quick`` parsed."""
        start, kept = layout.start, layout.kept
        opening, ending = data[: start + 1], data[max(start + 1, kept - ENDING) : kept]
        tails = tuple(t.text for t in layout.tails)
        head, tail, length = layout.head, layout.tail, len(data)
        self._keep(Chain(token, head, start, kept, tail, length, opening, ending, tails))

    def follows(self, token: DeltaBody, base: bytes | DeltaBody) -> bool:
        """True if the body ``token``, a delta of ``base``, is one of the last few bodies
        with new conversation items (its fields around them changed, for a delta with
        copies), and ``json.loads`` reads it (``follow``); a later body may then be
        checked against it.  False if it must be built."""
        chain = self._of(base)
        found = None if chain is None else follow(self._key, chain, token)
        if found is not None:
            self._keep(found)
        return found is not None

    def checks(
        self, token: bytes | DeltaBody, data: bytes, base: bytes | DeltaBody | None = None
    ) -> bool:
        """True if ``json.loads`` reads ``data`` as an object, decided against one of the
        last few bodies (``base``'s, else the last) with only what changed checked
        (``check``); a later body may then be checked against it.  False if it must be
        loaded."""
        if data[:1] != b"{" or data[1:2] == b"\x00":  # (json.loads: then not UTF-8)
            return False
        last = self._of(base) or (self._chains[-1] if self._chains else None)
        found = check(self._key, token, data, last)
        if found is not None:
            self._keep(found)
        return found is not None

    def _of(self, token: bytes | DeltaBody | None) -> Chain | None:
        for chain in self._chains:
            if chain.token is token:
                return chain
        return None

    def _keep(self, chain: Chain) -> None:
        self._chains = [*self._chains[1 - self.KEEP :], chain]


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


def follow(key: Key, chain: Chain, token: DeltaBody) -> Chain | None:
    """The chain of the body ``token``, a delta of ``chain``'s body, if it is that body
    with new conversation items (and its fields around them changed, for a delta with
    copies), and valid; None where it must be built and checked."""
    ref, middle = token.ref, token.middle
    if len(ref) > 3:
        try:
            return _follow_pieces(key, chain, token)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            return None
    prefix, suffix = ref[1], ref[2]
    after = chain.length - suffix
    if prefix < chain.kept or after > chain.tail:
        return None
    # base[kept:prefix] and base[after:tail] lie between the last item and "]": whitespace.
    kept, ending = chain.kept, chain.ending
    items = middle.strip(_WS)
    if items:
        if not _valid_items(items, kept > chain.start + 1):
            return None
        kept = prefix + len(middle.rstrip(_WS))
        new = middle.rstrip(_WS)  # (after base[kept:prefix], whitespace not kept)
        ending = (ending + new if prefix == chain.kept else new)[-ENDING:]
    shift = prefix + len(middle) - after
    tail, length = chain.tail + shift, chain.length + shift
    opening = chain.opening
    return Chain(token, chain.head, chain.start, kept, tail, length, opening, ending, chain.tails)


def _follow_pieces(key: Key, chain: Chain, token: DeltaBody) -> Chain | None:
    """``follow`` for a delta with copies: the body's pieces are the base's (by offset)
    and the new bytes.  One base piece must hold the conversation from its ``[`` to
    near its last item's end, the rest of which must come next; the pieces before it
    are the members before the array, taken from the base's ``opening`` and checked
    where they changed; those after it are new items and a tail, taken from the base's
    item ending and tail text, and checked as ``check`` checks them."""
    ref, middle = token.ref, token.middle
    found = _usual(key, chain, ref, middle) or _pieces(key, chain, ref, middle)
    if found is None:
        return None
    opening, head, end, rest = found
    ended = _items_end(key, rest, 0, chain.kept > chain.start + 1, chain)
    if ended is None:
        return None
    kept, tail, text = ended  # (in rest, which starts just past the base's last item)
    ending = (chain.ending + rest[:kept])[-ENDING:]
    kept, tail, length = end + kept, end + tail, end + len(rest)
    start = len(opening) - 1
    return Chain(token, head, start, kept, tail, length, opening, ending, _tails(text, chain))


def _usual(
    key: Key, chain: Chain, ref: list[int], middle: bytes
) -> tuple[bytes, int, int, bytes] | None:
    """``_pieces`` for the usual deltas of a session that toggles streaming, found
    with less work; None for any other delta (``_pieces`` then decides).  One copy,
    and the suffix from the base's tail text; then either the fields after the
    conversation changed (the prefix ends at the base's last item, the copy comes from
    its tail text) or a field before it did (the prefix and new bytes make a new
    opening, the copy holds the rest of it and the items up to the last one's end)."""
    if len(ref) != 6:
        return None
    _, prefix, suffix, literal, begin, length = ref
    tail, start, kept = chain.tail, chain.start, chain.kept
    after = chain.length - suffix
    if after < tail:
        return None
    text = chain.tails[0]  # base[tail:]
    if prefix == kept and begin >= tail:
        copied = text[begin - tail : begin - tail + length]
        rest = b"".join((middle[:literal], copied, middle[literal:], text[after - tail :]))
        return chain.opening, chain.head, kept, rest
    if not (prefix <= start and begin <= start < begin + length == kept):
        return None
    opening, head = chain.opening, chain.head
    if prefix or literal or begin:
        opening = b"".join((opening[:prefix], middle[:literal], opening[begin:]))
        found = key.member.search(opening)
        if found is None or found.end() != len(opening):
            return None
        checked = _head(opening[: found.start()].rstrip(_WS))
        if checked is None:
            return None
        head = checked
    end = len(opening) - 1 + kept - start
    return opening, head, end, middle[literal:] + text[after - tail :]


def _pieces(
    key: Key, chain: Chain, ref: list[int], middle: bytes
) -> tuple[bytes, int, int, bytes] | None:
    """``(opening, head, end, rest)`` of a delta with copies: the body's opening (its
    members before the array, and "[") and ``head`` as a ``Chain`` keeps them, the
    offset just past the items taken over from the base, and the body's bytes after
    them; None if its pieces are not those of a body with new items."""
    pieces: list[tuple[bool, int, int]] = [(True, 0, ref[1])]  # (from the base, start, end)
    at = 0
    for i in range(3, len(ref), 3):
        literal, begin, length = ref[i : i + 3]
        pieces += ((False, at, at + literal), (True, begin, begin + length))
        at += literal
    pieces += ((False, at, len(middle)), (True, chain.length - ref[2], chain.length))
    pieces = [p for p in pieces if p[1] < p[2]]
    lowest = chain.kept - len(chain.ending)  # the base's item bytes the chain keeps
    block = next(
        (n for n, (base, x, y) in enumerate(pieces) if base and x <= chain.start < y >= lowest),
        None,
    )
    if block is None:
        return None
    _, x, y = pieces[block]
    # The opening: what comes before the block, and the block up to "[".
    parts: list[bytes] = []
    for base, a, b in pieces[:block]:
        if base and b > chain.start + 1:
            return None
        parts.append(chain.opening[a:b] if base else middle[a:b])
    opening, head = chain.opening, chain.head
    if parts or x:
        opening = b"".join(parts) + chain.opening[x:]
        found = key.member.search(opening)
        if found is None or found.end() != len(opening):
            return None
        checked = _head(opening[: found.start()].rstrip(_WS))
        if checked is None:
            return None
        head = checked
    end = len(opening) - 1 + chain.kept - chain.start  # just past the last taken-over item
    # The rest: the block past the last item, and the pieces after the block.
    beyond = [(True, chain.kept, y)] if y > chain.kept else []
    found_parts = [
        _base_bytes(chain, a, b) if base else middle[a:b]
        for base, a, b in [*beyond, *pieces[block + 1 :]]
    ]
    if None in found_parts:
        return None
    rest = b"".join(part for part in found_parts if part is not None)
    if y < chain.kept:  # the last item's end must come next
        missing = _base_bytes(chain, y, chain.kept)
        if missing is None or not rest.startswith(missing):
            return None
        rest = rest[len(missing) :]
    return opening, head, end, rest


def _base_bytes(chain: Chain, a: int, b: int) -> bytes | None:
    """``base[a:b]`` from what the chain keeps of its body (the items' ending, the tail's
    text), or None if it does not keep them all."""
    out = b""
    if a < chain.kept:
        lowest = chain.kept - len(chain.ending)
        if a < lowest:
            return None
        out = chain.ending[a - lowest : min(b, chain.kept) - lowest]
        a = chain.kept
    if a < b:
        if a < chain.tail and chain.kept < chain.tail:  # whitespace the chain does not keep
            return None
        out += chain.tails[0][a - chain.tail : b - chain.tail]
    return out


def check(key: Key, token: bytes | DeltaBody, data: bytes, last: Chain | None) -> Chain | None:
    """The chain of ``data`` (a body starting with ``{``) if it is valid and reads as
    ``_reuse_quick`` reads a body, compared with ``last``'s body; None where it must be
    parsed.  ``token`` is what a later delta names it as."""
    try:
        return _check(key, token, data, last)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None


def _check(key: Key, token: bytes | DeltaBody, data: bytes, last: Chain | None) -> Chain | None:
    found = key.member.search(data)
    if found is None:
        return None
    start = found.end() - 1
    before = data[: found.start()].rstrip(_WS)
    base = bytes_of(last.token) if last is not None else b""
    head = len(before)
    same = last is not None and last.head == head and data.startswith(memoryview(base)[:head])
    if not same and _head(before) is None:
        return None
    taken = (  # the last body's items recur at the array's start
        last is not None
        and last.kept > last.start + 1
        and data.startswith(memoryview(base)[last.start : last.kept], start)
    )
    at = start + last.kept - last.start if taken and last is not None else start + 1
    ended = _items_end(key, data, at, taken, last)
    if ended is None:
        return None
    kept, tail, text = ended
    tails = _tails(text, last)
    opening, ending = data[: start + 1], data[max(start + 1, kept - ENDING) : kept]
    return Chain(token, head, start, kept, tail, len(data), opening, ending, tails)


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
