"""The usual named event stream split in C: ``event: NAME`` / ``data: ...`` pairs only.

Anthropic streams every event as such a pair followed by a blank line.
Splitting the body block by block in Python was most of reading one; here
the lines are checked and split with ``str`` methods alone.
"""

from __future__ import annotations

from itertools import repeat


def named_pairs(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(names, payloads)`` of a body of ``event:``/``data:`` pairs, or None if it is
    anything else (the general reader in ``_sse.parse_sse`` then takes it).

    Such a body's lines are ``event line, data line, ""`` repeated, then one
    ``""`` after the last line end.
    """
    lines = text.split("\n")
    n = len(lines) // 3
    if len(lines) != 3 * n + 1 or lines[-1]:
        return None
    heads, datas = lines[0 : 3 * n : 3], lines[1 : 3 * n : 3]
    if any(lines[2 : 3 * n : 3]):  # each pair is followed by a blank line
        return None
    if not (
        all(map(str.startswith, heads, repeat("event: ")))
        and all(map(str.startswith, datas, repeat("data: ")))
    ):
        return None
    # No line holds a line end, so "\nevent: " occurs only where the lines are joined.
    names = ("\n" + "\n".join(heads)).split("\nevent: ")[1:]
    payloads = ("\n" + "\n".join(datas)).split("\ndata: ")[1:]
    return tuple(names), tuple(payloads)
