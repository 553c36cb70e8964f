"""Views of data in which a secret may hide from a plain scan: JSON escapes and SSE events.

A key written ``\\u0073k-proj...`` is not ``sk-proj...`` to a regular
expression, and a key a model streams as two server-sent events sits in two
JSON strings with the event framing between them.  A ``View`` is the text a
reader of the data would see (escapes undone; the text fields of a stream's
events joined) plus where each of its bytes came from, so a secret found in
the view maps back to the raw bytes that spell it, in one piece or several.
Both views are built only when their trigger is present (``\\u00``; two
``data:`` fields at the start of a line, as an event stream frames its
events), in one pass over the data.  A JSON body that merely mentions
``data:`` inside a string is not an event stream: no reader joins its text
fields, so they are not joined here either.
"""

from __future__ import annotations

import bisect
import re

import attrs

_ESCAPE = re.compile(rb"\\u00([0-7][0-9a-fA-F])")
_SSE_TEXT = re.compile(
    rb'"(?:content|text|delta|arguments|partial_json|thinking|refusal)"\s{0,8}:\s{0,8}'
    rb'"((?:[^"\\\n]++|\\.){1,65536})"'  # runs taken whole: no per-byte alternation
)


@attrs.frozen(kw_only=True)
class View:
    """Bytes derived from some data, with a map back to it."""

    data: bytes
    """The view's bytes."""
    starts: tuple[int, ...]
    """Where each segment of the view starts in the view, ascending."""
    raw: tuple[tuple[int, int, bool], ...]
    """Per segment: its raw start, its raw length, and whether it is a verbatim copy
    (else one view byte stands for the whole raw range, e.g. an escape)."""
    matches: tuple[int, ...] = ()
    """Per segment, where the match it was taken from starts in the raw data
    (event texts only: a field's name comes before its text)."""

    def to_raw(self, start: int, end: int) -> list[tuple[int, int]]:
        """The raw ranges holding view bytes ``start:end``, adjacent ones merged."""
        out: list[tuple[int, int]] = []
        i = max(0, bisect.bisect_right(self.starts, start) - 1)
        while i < len(self.starts) and self.starts[i] < end:
            at = self.starts[i]
            raw_start, raw_len, verbatim = self.raw[i]
            if verbatim:
                lo = raw_start + max(start, at) - at
                hi = raw_start + min(end, at + raw_len) - at
            else:
                lo, hi = raw_start, raw_start + raw_len
            if lo < hi:
                if out and out[-1][1] == lo:
                    out[-1] = (out[-1][0], hi)
                else:
                    out.append((lo, hi))
            i += 1
        return out


class _Builder:
    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = []
        self.starts: list[int] = []
        self.raw: list[tuple[int, int, bool]] = []
        self.size = 0
        self.matches: list[int] = []

    def add(self, data: bytes | memoryview, raw_start: int, raw_len: int, verbatim: bool) -> None:
        if not data:
            return
        self.parts.append(data)
        self.starts.append(self.size)
        self.raw.append((raw_start, raw_len, verbatim))
        self.size += len(data)

    def view(self) -> View:
        return View(
            data=b"".join(self.parts),
            starts=tuple(self.starts),
            raw=tuple(self.raw),
            matches=tuple(self.matches),
        )


def unescaped(data: bytes) -> View | None:
    """``data`` with its ``\\u00XX`` JSON escapes (ASCII ones) undone; None without any."""
    if b"\\u00" not in data:
        return None
    out = _Builder()
    if not add_unescaped(out, data, 0):
        return None
    return out.view()


def add_unescaped(out: _Builder, data: bytes, pos: int) -> bool:
    """Segments of ``data[pos:]`` with its escapes undone added to ``out``; False if
    there is no escape there."""
    any_escape = False
    for m in _ESCAPE.finditer(data, pos):
        out.add(data[pos : m.start()], pos, m.start() - pos, True)
        out.add(bytes((int(m.group(1), 16),)), m.start(), 6, False)
        pos = m.end()
        any_escape = True
    out.add(data[pos:], pos, len(data) - pos, True)
    return any_escape


def add_texts(out: _Builder, data: bytes, pos: int) -> None:
    """The event text fields of ``data[pos:]`` added to ``out``, each with its match's start."""
    for m in _SSE_TEXT.finditer(data, pos):
        start, end = m.span(1)
        out.add(data[start:end], start, end - start, True)
        out.matches.append(m.start())


MARK = b"data:"
"""The field that starts an event's data line."""


def line_marks(data: bytes, at: int, want: int) -> list[int]:
    """Where the first ``want`` ``data:`` fields from ``at`` on start a line (at the
    start of ``data`` or after a CR or LF, as server-sent events frame them).

    Searched as ``\\ndata:`` and ``\\rdata:``, so the ``data:`` a JSON text mentions
    cost no step each; a CRLF line is found once, by its LF."""
    out = [0] if at == 0 and data.startswith(MARK) else []
    for eol in (b"\n", b"\r"):
        pos = max(at - 1, 0)
        for _ in range(want):
            pos = data.find(eol + MARK, pos)
            if pos < 0:
                break
            out.append(pos + 1)
            pos += 1
    return sorted(out)[:want]


def event_texts(data: bytes) -> View | None:
    """The text fields of a server-sent event stream's events, joined; None for other
    data (fewer than two ``data:`` lines)."""
    if len(line_marks(data, 0, 2)) < 2:
        return None
    out = _Builder()
    add_texts(out, data, 0)
    if len(out.parts) < 2:
        return None
    return out.view()


def views(data: bytes) -> tuple[View, ...]:
    """Every view of ``data`` worth scanning besides the data itself."""
    return tuple(v for v in (unescaped(data), event_texts(data)) if v is not None)
