"""Following a request delta with copies from its base (``follow_pieces``).

A session that asks with and without streaming stores every other request as a
delta whose copies take the conversation from its base around a field that was
added or dropped.  Such a body is checked from its pieces: the members before
the array (the base's opening, checked where they changed), the items taken
over, and the new items and tail, taken from what the base's ``Chain`` keeps.
"""

from __future__ import annotations

from ...tape._delta import DeltaBody
from ._chain import ENDING, Chain, _head, _items_end, _tails
from ._quick import _WS, Key


def follow_pieces(key: Key, chain: Chain, token: DeltaBody) -> Chain | None:
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
        checked = _opening_head(key, opening)
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
        checked = _opening_head(key, opening)
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


def _opening_head(key: Key, opening: bytes) -> int | None:
    """``Chain.head`` of a changed opening (the members before the conversation, then
    its key and "["): None unless the key comes once, at its end, and ``json.loads``
    reads the members before it."""
    found = key.member.search(opening)
    if found is None or found.end() != len(opening):
        return None
    return _head(opening[: found.start()].rstrip(_WS))


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
