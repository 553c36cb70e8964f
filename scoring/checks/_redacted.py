"""Outcome checks over a snapshot whose files had secrets masked before recording.

Masks keep a secret's length and hold only ``REDACTED`` and ``*``, so an
immutable file is still compared honestly: equal outside the masked spans.
A check that ran on masked content says so in its detail.
"""

from __future__ import annotations

import re

from evaltape.recorder import Session

_MASK = re.compile(rb"REDACTED\**|REDACTE|REDACT|REDAC|REDA|RED")
"""A same-length mask: ``REDACTED`` then ``*``, or a prefix of it for a short secret."""


def redacted_note(paths: tuple[str, ...]) -> str:
    """What a check's detail adds when it ran on masked files."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return f"; secrets masked in {shown} before recording: checked on redacted content"


def same_but_masked(recorded: bytes, original: bytes, path: str, session: Session) -> bool:
    """True if ``recorded`` is ``original``, or (for a file the snapshot masked) differs
    from it only inside masks of the same length."""
    if recorded == original:
        return True
    if path not in session.workspace_redacted or len(recorded) != len(original):
        return False
    expected = bytearray(original)
    for m in _MASK.finditer(recorded):
        expected[m.start() : m.end()] = m.group()
    return expected == recorded
