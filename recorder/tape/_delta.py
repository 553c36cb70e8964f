"""Delta encoding of request bodies, so a tape grows linearly with turns.

Agent requests repeat the whole conversation on every turn.  Each request
body is stored as a reference to one of the session's last few request bodies
(the *base*) plus the bytes that differ: ``base[:prefix] + middle +
base[len(base) - suffix:]``.  For chat APIs the new turn sits between the
unchanged conversation (prefix) and the unchanged tool schemas (suffix), so
``middle`` holds just the new messages.  The encoding is byte-exact.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

KEEP = 4
"""How many recent request bodies of a session may serve as a base."""

MIN_SAVING = 64
"""A delta is used only when it saves at least this many bytes."""

_BLOCK = 1 << 16
"""Bytes ``common_prefix`` compares at a time before it bisects."""


_REMEMBER = 1 << 16
"""``common_prefix`` remembers its results for bodies this long or longer."""

_remembered: deque[tuple[bytes, bytes, int]] = deque(maxlen=4)
_remembered_lock = threading.Lock()


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``.

    Compares through ``bytes.startswith`` on memoryview slices: memcmp speed
    and no copies, so checking a long conversation costs microseconds.  Blocks
    are compared in order, so the bytes are read about once (a bisection over
    the whole range reads them twice).

    While recording, the redactor compares a new request body with the last
    one, and then the tape's delta stage compares the same two objects again
    (a body with nothing to mask is written as the very object it was sent
    as).  So the last few results for long bodies are remembered by the
    identity of the two objects, which are held, so an identity cannot be
    reused while it is remembered; bytes do not change, so the result holds.
    """
    if len(a) >= _REMEMBER:
        with _remembered_lock:
            for x, y, n in _remembered:
                if x is a and y is b:
                    return n
        n = _common_prefix(a, b)
        with _remembered_lock:
            _remembered.append((a, b, n))
        return n
    return _common_prefix(a, b)


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    view = memoryview(a)
    lo = 0
    while lo < n:
        hi = min(n, lo + _BLOCK)
        if not b.startswith(view[lo:hi], lo):
            break
        lo = hi
    else:
        return n
    # Invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi].
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit`` bytes."""
    n = min(len(a), len(b), limit)
    if n <= 0:
        return 0
    view = memoryview(a)
    la, lb = len(a), len(b)
    if b.endswith(view[la - n :]):
        return n
    lo, hi = 0, n
    # Invariant: the last lo bytes agree, the last hi bytes do not.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.endswith(view[la - mid : la - lo], 0, lb - lo):
            lo = mid
        else:
            hi = mid
    return lo


ANCHOR = 32
"""Bytes that must agree for a copy from inside the base to be looked for."""

SEARCH = 1 << 16
"""How far past a difference the next agreeing bytes are looked for."""

MAX_COPIES = 8
"""Most copies from inside the base one reference holds."""


def _agree(a: bytes, i: int, b: bytes, j: int, n: int) -> int:
    """Longest ``L <= n`` with ``a[i : i + L] == b[j : j + L]``, without copying
    (``common_prefix`` at offsets; both ranges lie inside their strings)."""
    view = memoryview(a)
    if b.startswith(view[i : i + n], j):
        return n
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.startswith(view[i + lo : i + mid], j + lo):
            lo = mid
        else:
            hi = mid
    return lo


def copies_in(base: bytes, body: bytes, prefix: int, suffix: int) -> list[int]:
    """Copies from inside ``base`` that rebuild more of ``body`` between the common
    prefix and suffix, as ``[literal, start, length, ...]``: ``literal`` new bytes,
    then ``base[start : start + length]``.  Greedy and bounded: after each
    difference the next ``ANCHOR`` bytes of one side are looked for in the next
    ``SEARCH`` bytes of the other (bytes left out of the base, or put into the
    body), so a flag dropped from a request's head no longer hides the whole
    conversation that follows it."""
    out: list[int] = []
    bp, be = prefix, len(base) - suffix
    p, e = prefix, len(body) - suffix
    literal_from = p
    while len(out) < 3 * MAX_COPIES and e - p >= ANCHOR and be - bp >= ANCHOR:
        start = base.find(body[p : p + ANCHOR], bp, min(be, bp + SEARCH + ANCHOR))
        if start < 0:
            at = body.find(base[bp : bp + ANCHOR], p, min(e, p + SEARCH + ANCHOR))
            if at < 0:
                break
            p, start = at, bp
        length = _agree(base, start, body, p, min(be - start, e - p))
        out += [p - literal_from, start, length]
        p = literal_from = p + length
        bp = start + length
    return out


def middle_of(body: bytes, ref: list[int]) -> bytes:
    """The bytes of ``body`` a reference does not rebuild from its base."""
    _, prefix, suffix = ref[:3]
    parts = []
    at = prefix
    for i in range(3, len(ref), 3):
        literal, length = ref[i], ref[i + 2]
        parts.append(body[at : at + literal])
        at += literal + length
    parts.append(body[at : len(body) - suffix])
    return b"".join(parts)


class DeltaEncoder:
    """Per-session state on the writing side."""

    def __init__(self) -> None:
        self._recent: deque[bytes] = deque(maxlen=KEEP)
        self._lengths: tuple[int, ...] = ()

    def base_length(self, back: int) -> int:
        """Length of the body a reference made by the last ``encode`` calls ``back``
        (kept from before that call, which may have pushed the base out of the window)."""
        return self._lengths[-back]

    def encode(self, body: bytes, *, copies: bool = False) -> tuple[list[int] | None, bytes]:
        """Return ``([back, prefix, suffix], middle)`` or ``(None, body)``; with
        ``copies``, the reference may go on with copies from inside the base
        (``[back, prefix, suffix, literal, start, length, ...]``, see ``copies_in``)."""
        best: list[int] | None = None
        best_saving = MIN_SAVING - 1
        for back, base in enumerate(reversed(self._recent), start=1):
            if len(base) <= best_saving:  # it cannot save more: not compared
                continue
            prefix = common_prefix(base, body)
            suffix = common_suffix(base, body, min(len(base), len(body)) - prefix)
            ref = [back, prefix, suffix]
            saving = prefix + suffix
            if copies:
                found = copies_in(base, body, prefix, suffix)
                ref += found
                saving += sum(found[2::3])
            if saving > best_saving:
                best, best_saving = ref, saving
        self._lengths = tuple(len(b) for b in self._recent)
        self._recent.append(body)
        if best is None:
            return None, body
        return best, middle_of(body, best)


class DeltaBody:
    """A body stored as a delta, rebuilt only when first asked for (``built``).

    ``base`` is the body it refers to (bytes, or another ``DeltaBody``; None
    once built, so a session's bodies do not hold each other) and ``ref`` its
    reference, checked by the reader: ``[back, prefix, suffix]`` and any
    copies.  A reader that knows what changed (the request parse, for the
    conversation's new items) reads ``middle`` without building the body.
    """

    __slots__ = ("_built", "base", "middle", "ref", "size")

    def __init__(self, base: bytes | DeltaBody, ref: list[int], middle: bytes, size: int) -> None:
        self.base: bytes | DeltaBody | None = base
        self.ref = ref
        self.middle = middle
        self.size = size
        """Length of the body."""
        self._built: bytes | None = None

    def __len__(self) -> int:
        return self.size

    def __reduce__(self) -> tuple[Any, ...]:
        return (bytes, (self.built(),))  # (pickled as its bytes, not as its chain)

    @property
    def is_built(self) -> bool:
        """True once ``built`` has built the body."""
        return self._built is not None

    def built(self) -> bytes:
        """The body's bytes (built once; a chain of unbuilt bases is built oldest first,
        without recursion)."""
        body = self._built
        if body is not None:
            return body
        with _building:  # (threads may ask for bodies of one chain at once)
            chain = [self]
            base = self.base
            while isinstance(base, DeltaBody) and base._built is None:
                chain.append(base)
                base = base.base
            for node in reversed(chain):  # each base is built by the time it is used
                if node._built is None:
                    base = node.base
                    assert base is not None
                    node._built = _rebuild(bytes_of(base), node.ref, node.middle)
                    node.base = None
            body = self._built
        assert body is not None
        return body


_building = threading.Lock()


def bytes_of(body: bytes | DeltaBody) -> bytes:
    """The bytes of a body ``DeltaDecoder.decode_lazy`` gave."""
    return body if isinstance(body, bytes) else body.built()


def _size(ref: list[int], middle: bytes) -> int:
    """Length of the body a checked reference and its new bytes stand for."""
    return ref[1] + len(middle) + ref[2] + sum(ref[5::3])


def _rebuild(base: bytes, ref: list[int], middle: bytes) -> bytes:
    """``base[:prefix]``, the new bytes and copies, ``base[len(base) - suffix:]``."""
    prefix, suffix = ref[1], ref[2]
    view = memoryview(base)
    parts: list[bytes | memoryview] = [view[:prefix]]
    at = 0
    for i in range(3, len(ref), 3):
        literal, begin, length = ref[i : i + 3]
        parts += (middle[at : at + literal], view[begin : begin + length])
        at += literal
    parts += (middle[at:] if at else middle, view[len(base) - suffix :])
    return b"".join(parts)


class DeltaDecoder:
    """Per-session state on the reading side; mirrors ``DeltaEncoder``."""

    def __init__(self) -> None:
        self._recent: deque[bytes | DeltaBody] = deque(maxlen=KEEP)
        self._checked: tuple[list[int], bytes, bytes | DeltaBody] | None = None  # ``size``'s last

    def base_length(self, back: int) -> int:
        """Length of the ``back``-th most recent body; ``ValueError`` if there is none."""
        if not 1 <= back <= len(self._recent):
            raise ValueError(f"delta refers to body -{back}, only {len(self._recent)} known")
        return len(self._recent[-back])

    def _base(self, ref: list[int], middle: bytes) -> bytes | DeltaBody:
        back, prefix, suffix = ref[:3]
        if not 1 <= back <= len(self._recent):
            raise ValueError(f"delta refers to body -{back}, only {len(self._recent)} known")
        base = self._recent[-back]
        if prefix < 0 or suffix < 0 or prefix + suffix > len(base):
            raise ValueError("delta range outside its base body")
        if len(ref) % 3:
            raise ValueError("delta copies are not [literal, start, length] triples")
        literals = 0
        for i in range(3, len(ref), 3):
            literal, begin, length = ref[i : i + 3]
            literals += literal
            if literal < 0 or begin < 0 or length < 0 or begin + length > len(base):
                raise ValueError("delta copy outside its base body")
        if literals > len(middle):
            raise ValueError("delta copies need more new bytes than it holds")
        return base

    def size(self, ref: list[int] | None, middle: bytes) -> int:
        """Length of the body ``decode`` would rebuild, found without building it;
        raises ``ValueError`` if the reference is impossible."""
        if ref is None:
            return len(middle)
        self._checked = (ref, middle, self._base(ref, middle))
        return _size(ref, middle)

    def decode(self, ref: list[int] | None, middle: bytes) -> bytes:
        """Rebuild a body; raises ``ValueError`` if the reference is impossible."""
        return bytes_of(self.decode_lazy(ref, middle))

    def decode_lazy(self, ref: list[int] | None, middle: bytes) -> bytes | DeltaBody:
        """``decode``'s body, as a ``DeltaBody`` to build when asked for if it is a delta;
        raises ``ValueError`` if the reference is impossible."""
        checked, self._checked = self._checked, None
        body: bytes | DeltaBody
        if ref is None:
            body = middle
        else:
            if checked is not None and checked[0] is ref and checked[1] is middle:
                base = checked[2]  # what ``size`` just checked, with nothing appended since
            else:
                base = self._base(ref, middle)
            body = DeltaBody(base, ref, middle, _size(ref, middle))
        self._recent.append(body)
        return body
