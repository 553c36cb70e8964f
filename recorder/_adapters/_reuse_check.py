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
  parse; the body is never built.
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
from evaltape.recorder._adapters._reuse_quick import _MEMBERS, _NOT_WS, _WS, RECENT_TAILS, Key
from evaltape.recorder._delta import DeltaBody, bytes_of

_COMMA, _CLOSE = ord(","), ord("]")
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])


class Chain:
    """A checked body's pieces, and the body as the tape knows it (``token``: bytes, or
    the ``DeltaBody`` a later delta names as its base)."""

    __slots__ = ("head", "kept", "length", "start", "tail", "tails", "token")

    def __init__(
        self,
        token: bytes | DeltaBody,
        head: int,
        start: int,
        kept: int,
        tail: int,
        length: int,
        tails: tuple[bytes, ...],
    ) -> None:
        self.token = token
        self.head = head  # body[:head] is "{" and the members before the array, with a comma
        self.start = start  # offset of the conversation array's "["
        self.kept = kept  # offset just past its last item (start + 1 if it has none)
        self.tail = tail  # offset of its "]": body[tail:] is tails[0]
        self.length = length
        self.tails = tails  # this body's tail text first, then the last few other ones


def follow(
    chain: Chain, token: bytes | DeltaBody, prefix: int, suffix: int, middle: bytes
) -> Chain | None:
    """The chain of the body ``token``, stored as ``chain``'s body's first ``prefix``
    and last ``suffix`` bytes with ``middle`` between, if it is that body with new
    conversation items and valid; None where it must be built and checked."""
    after = chain.length - suffix
    if prefix < chain.kept or after > chain.tail:
        return None
    # base[kept:prefix] and base[after:tail] lie between the last item and "]": whitespace.
    kept = chain.kept
    items = middle.strip(_WS)
    if items:
        if not _valid_items(items, kept > chain.start + 1):
            return None
        kept = prefix + len(middle.rstrip(_WS))
    shift = prefix + len(middle) - after
    tail, length = chain.tail + shift, chain.length + shift
    return Chain(token, chain.head, chain.start, kept, tail, length, chain.tails)


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
    if before == b"{":
        head = 1
    elif before.endswith(b","):
        head = len(before)
        same = last is not None and last.head == head and data.startswith(memoryview(base)[:head])
        if not same and not _valid_object(before[:-1] + b"}"):
            return None
    else:
        return None
    resume = start + 1  # where the text after the taken-over items resumes
    comma = False
    if (
        last is not None
        and last.kept > last.start + 1
        and data.startswith(memoryview(base)[last.start : last.kept], start)
    ):
        end = start + last.kept - last.start
        after = _NOT_WS.search(data, end)
        if after is None:
            return None
        mark = data[after.start()]
        if mark == _COMMA:
            comma, resume = True, after.start() + 1
        elif mark == _CLOSE:
            resume = end
        else:  # a number that grew, or anything else
            return None
    tail = -1
    known = b""
    for known in last.tails if last is not None else ():
        if len(data) - len(known) >= resume and data.endswith(known):
            tail = len(data) - len(known)
            break
    if tail >= 0:
        text = known
        items = data[resume:tail].strip(_WS)
        if (items or comma) and not _valid_items(b"," + items if comma else items, comma):
            return None
    else:
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
        text = data[tail:]
    kept = tail
    while data[kept - 1] in _WS:  # (stops at the "[" of an empty array)
        kept -= 1
    others = tuple(t for t in last.tails if t != text) if last is not None else ()
    return Chain(token, head, start, kept, tail, len(data), (text, *others[: RECENT_TAILS - 1]))


def _valid_items(items: bytes, comma: bool) -> bool:
    """True if ``items`` (stripped, not empty) are conversation items ``json.loads``
    reads: one or more values, after a comma if ``comma`` (items came before)."""
    if comma:
        if items[:1] != b",":
            return False
        items = b"0" + items  # "[0,new...]": a valid item before, for the comma
    try:
        _RAW_ITEMS.decode(b"[" + items + b"]")
        items.decode("utf-8", "surrogatepass")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return not huge_int(items)


def _valid_object(text: bytes) -> bool:
    """True if ``text`` is a JSON object ``json.loads`` reads."""
    try:
        _RAW_OBJECT.decode(text)
        text.decode("utf-8", "surrogatepass")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return not huge_int(text)
