"""Delta encoding of request bodies, so a tape grows linearly with turns.

Agent requests repeat the whole conversation on every turn.  Each request
body is stored as a reference to one of the session's last few request bodies
(the *base*) plus the bytes that differ: ``base[:prefix] + middle +
base[len(base) - suffix:]``.  For chat APIs the new turn sits between the
unchanged conversation (prefix) and the unchanged tool schemas (suffix), so
``middle`` holds just the new messages.  The encoding is byte-exact.
"""

from __future__ import annotations

from collections import deque

KEEP = 4
"""How many recent request bodies of a session may serve as a base."""

MIN_SAVING = 64
"""A delta is used only when it saves at least this many bytes."""

_BLOCK = 1 << 16
"""Bytes ``common_prefix`` compares at a time before it bisects."""


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``.

    Compares through ``bytes.startswith`` on memoryview slices: memcmp speed
    and no copies, so checking a long conversation costs microseconds.  Blocks
    are compared in order, so the bytes are read about once (a bisection over
    the whole range reads them twice).
    """
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


class DeltaEncoder:
    """Per-session state on the writing side."""

    def __init__(self) -> None:
        self._recent: deque[bytes] = deque(maxlen=KEEP)

    def encode(self, body: bytes) -> tuple[list[int] | None, bytes]:
        """Return ``([back, prefix, suffix], middle)`` or ``(None, body)``."""
        best: tuple[int, int, int] | None = None
        best_saving = MIN_SAVING - 1
        for back, base in enumerate(reversed(self._recent), start=1):
            if len(base) <= best_saving:  # it cannot save more: not compared
                continue
            prefix = common_prefix(base, body)
            suffix = common_suffix(base, body, min(len(base), len(body)) - prefix)
            if prefix + suffix > best_saving:
                best, best_saving = (back, prefix, suffix), prefix + suffix
        self._recent.append(body)
        if best is None:
            return None, body
        back, prefix, suffix = best
        return [back, prefix, suffix], body[prefix : len(body) - suffix]


class DeltaDecoder:
    """Per-session state on the reading side; mirrors ``DeltaEncoder``."""

    def __init__(self) -> None:
        self._recent: deque[bytes] = deque(maxlen=KEEP)

    def size(self, ref: list[int] | None, middle: bytes) -> int:
        """Length of the body ``decode`` would rebuild, found without building it;
        raises ``ValueError`` if the reference is impossible."""
        if ref is None:
            return len(middle)
        back, prefix, suffix = ref
        if not 1 <= back <= len(self._recent):
            raise ValueError(f"delta refers to body -{back}, only {len(self._recent)} known")
        if prefix < 0 or suffix < 0 or prefix + suffix > len(self._recent[-back]):
            raise ValueError("delta range outside its base body")
        return prefix + len(middle) + suffix

    def decode(self, ref: list[int] | None, middle: bytes) -> bytes:
        """Rebuild a body; raises ``ValueError`` if the reference is impossible."""
        if ref is None:
            body = middle
        else:
            back, prefix, suffix = ref
            if not 1 <= back <= len(self._recent):
                raise ValueError(f"delta refers to body -{back}, only {len(self._recent)} known")
            base = self._recent[-back]
            if prefix < 0 or suffix < 0 or prefix + suffix > len(base):
                raise ValueError("delta range outside its base body")
            view = memoryview(base)
            body = b"".join((view[:prefix], middle, view[len(base) - suffix :]))
        self._recent.append(body)
        return body
