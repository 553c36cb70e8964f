"""msgspec's JSON parser where its value is ``json.loads``'s, and the one case to keep from it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import msgspec

_decode: Callable[[str | bytes], Any] = msgspec.json.Decoder().decode
_DIGITS = bytes(48 if 48 <= i < 58 else 32 for i in range(256))  # digits -> "0", else " "
_INT_DIGITS = sys.get_int_max_str_digits() or 0


def huge_int(text: str | bytes) -> bool:
    """True if ``text`` holds a run of more digits than ``json.loads`` turns into an int."""
    if not _INT_DIGITS or len(text) <= _INT_DIGITS:
        return False
    # Such a run spans two neighbouring characters of every ``step``-th one, so a text
    # whose sampled characters are never two digits in a row holds none (the usual
    # case, decided on a few characters instead of the whole text).
    step = (_INT_DIGITS + 1) // 2
    sample = text[::step]
    raw = sample if isinstance(sample, bytes) else sample.encode("utf-8", "surrogatepass")
    if b"00" not in raw.translate(_DIGITS):  # (a sampled non-ASCII char encodes to no digit)
        return False
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return b"0" * (_INT_DIGITS + 1) in raw.translate(_DIGITS)


def fast(text: str | bytes) -> Any:
    """A strict JSON parser in C: where it accepts a text, its value is ``json.loads``'s
    (big integers stay exact, duplicate keys keep the last).  What it refuses (a BOM,
    NaN, lone surrogates, anything malformed, an int past Python's digit limit) goes
    to ``json.loads``, which also words the problem."""
    if huge_int(text):
        raise msgspec.DecodeError("an integer past the digit limit")
    return _decode(text)
