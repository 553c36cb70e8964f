"""The secret views of a body that repeats a recent one's first bytes, built from there.

``unescaped`` and ``event_texts`` (``_secret_views.py``) read the whole body.
When a new request body shares ``shared`` leading bytes with a recent one
whose view is known, the new body's view is that view up to a *cut* plus the
view of the bytes from the cut on: the result equals building it whole, and
the work is the new bytes plus a few bytes before the cut.

- Escapes are six bytes and cannot overlap, so every escape that starts five
  bytes before the end of the shared bytes or earlier is in both bodies.
- An event text match reads from its field name to the first unescaped quote
  or newline after it; one that starts more than 40 bytes (the longest field
  name with its spacing) before the last such quote or newline of the shared
  bytes reads only shared bytes.  A match the cut falls in stands if it ends
  within the shared bytes (it reads only them), and the cut moves to its end;
  else the cut moves back to its start.  Either way the cut is where the
  leftmost-match chain of a whole build goes on.
"""

from __future__ import annotations

import bisect

from ._views import (
    _ESCAPE,
    MARK,
    View,
    _Builder,
    add_texts,
    add_unescaped,
    line_marks,
)

_NAME = 40
"""More than the bytes an event text match reads before its text (name, colon, spaces)."""


def _kept(out: _Builder, old: View, count: int, cut: int | None = None) -> None:
    """``old``'s first ``count`` segments into ``out``, then (``cut``) the next
    verbatim one up to raw offset ``cut``."""
    size = old.starts[count] if count < len(old.starts) else len(old.data)
    if count:
        out.parts.append(memoryview(old.data)[:size])  # copied once, by the view's join
        out.starts.extend(old.starts[:count])
        out.raw.extend(old.raw[:count])
        out.matches.extend(old.matches[:count])
        out.size = size
    if cut is not None and count < len(old.raw):
        raw_start = old.raw[count][0]
        out.add(old.data[size : size + cut - raw_start], raw_start, cut - raw_start, True)


def unescaped_grown(old: View | None, data: bytes, shared: int) -> tuple[View | None, int]:
    """``unescaped(data)`` from ``old``, the view of a body whose first ``shared``
    bytes ``data`` repeats (None: that body had no escape); and how many leading
    view bytes the two views share."""
    cut = max(0, shared - 5)
    out = _Builder()
    if old is None:
        if _ESCAPE.search(data, cut) is None:
            return None, 0
        out.add(memoryview(data)[:cut], 0, cut, True)
        had = False
    else:
        i = bisect.bisect_right(old.raw, cut, key=lambda r: r[0]) - 1
        raw_start, _, verbatim = old.raw[i] if i >= 0 else (0, 0, True)
        if i >= 0 and not verbatim and raw_start < cut:
            cut, i = raw_start, i - 1  # the cut falls in an escape: go back before it
            _kept(out, old, i + 1)
        elif i >= 0 and raw_start < cut:
            _kept(out, old, i, cut)
        else:
            _kept(out, old, max(i, 0))
        had = next((r[0] for r in old.raw if not r[2]), cut) < cut
    shared_view = out.size
    if not add_unescaped(out, data, cut) and not had:
        return None, 0
    return out.view(), shared_view


def marks_grown(old: tuple[int, ...], data: bytes, shared: int) -> tuple[int, ...]:
    """Where the first two ``data:`` lines of ``data`` start (fewer if it has fewer,
    ``line_marks``), from ``old``, those of a body whose first ``shared`` bytes
    ``data`` repeats: a mark reads the byte before it and its own five, so only the
    bytes from shortly before ``shared`` on are searched."""
    marks = [p for p in old if p + len(MARK) <= shared]
    if len(marks) < 2:
        marks += line_marks(data, max(0, shared - len(MARK) + 1), 2 - len(marks))
    return tuple(marks[:2])


def event_texts_grown(
    old: View | None, data: bytes, shared: int, marks: tuple[int, ...]
) -> tuple[View | None, int]:
    """``event_texts(data)`` from ``old``, the event texts of a body whose first
    ``shared`` bytes ``data`` repeats (None: that body had none), ``marks`` being
    ``data``'s ``marks_grown``; and how many leading view bytes the two views share."""
    if len(marks) < 2:
        return None, 0
    end = _last_stop(data, shared)
    if old is None or end < 0:
        cut, count = 0, 0
    else:
        cut = max(0, end - _NAME)
        count = bisect.bisect_left(old.matches, cut)  # the segments whose match starts before
        last_end = old.raw[count - 1][0] + old.raw[count - 1][1] + 1 if count else 0
        if last_end > shared:  # the cut falls in a match that reads new bytes:
            count -= 1  # build again from its start
            cut = old.matches[count]
        elif last_end > cut:  # in a match of shared bytes only: it stands
            cut = last_end
    out = _Builder()
    if old is not None:
        _kept(out, old, count)
    shared_view = out.size
    add_texts(out, data, cut)
    if len(out.starts) < 2:
        return None, 0
    return out.view(), shared_view


def _last_stop(data: bytes, shared: int) -> int:
    """The last newline or unescaped quote in ``data[:shared]`` (-1 if none): no text
    field's match reads past it once it has started before it."""
    quote = data.rfind(b'"', 0, shared)
    while quote > 0:
        back = quote
        while back > 0 and data[back - 1] == 0x5C:  # a backslash
            back -= 1
        if (quote - back) % 2 == 0:
            break
        quote = data.rfind(b'"', 0, back)
    return max(quote, data.rfind(b"\n", 0, shared))
