"""Text from a tape made safe to print on a terminal.

A tape may come from a stranger, and its fields (replies, tool output, file
names, reasons) may hold terminal control sequences: clear the screen, move
the cursor, write the clipboard (OSC 52), rename the window.  Every control
character but newline and tab, and the bidirectional overrides that reorder
what a line appears to say, are printed as visible escapes (``\\x1b``).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    return _UNSAFE.sub(_visible, text)
