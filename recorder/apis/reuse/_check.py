"""Whether a request body is valid JSON, decided from what changed, without parsing it.

Folding a session needs to know at once whether each request body is one
``json.loads`` reads (a body that is not is the call's error); its values are
needed only when the request side is read (``CallDecoder``).  So a session's
bodies of one API are *checked* in order, each against one of the last few
checked before it (its ``Chain``, ``_reuse_chain``: where its conversation array's
items end and its tail starts, and the tail texts seen lately):

- ``follow``: a body the tape stores as a delta (``base[:prefix] + middle +
  base[len(base) - suffix:]``) whose base has a chain, whose prefix reaches past
  the base's last conversation item and whose suffix covers the base's tail,
  is the base with ``middle`` (and only whitespace) where the items end.  It is
  valid exactly when ``middle`` holds nothing, or a comma and new items that
  parse; the body is never built.  A delta with copies from its base (a field
  dropped or added around the conversation) is followed from its pieces
  (``_reuse_pieces``) when a copy holds the conversation and the others come
  from what the chain keeps of the base: its opening up to ``[``, its items'
  last bytes, its tail.
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

from ...tape._delta import DeltaBody, bytes_of
from ._chain import (
    ENDING,
    Chain,
    _head,
    _items_end,
    _tails,
    _valid_items,
)
from ._pieces import follow_pieces
from ._quick import _WS, Key, Layout


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


def follow(key: Key, chain: Chain, token: DeltaBody) -> Chain | None:
    """The chain of the body ``token``, a delta of ``chain``'s body, if it is that body
    with new conversation items (and its fields around them changed, for a delta with
    copies), and valid; None where it must be built and checked."""
    ref, middle = token.ref, token.middle
    if len(ref) > 3:
        try:
            return follow_pieces(key, chain, token)
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
