"""Short diffs and edit keys for changed text and JSON values.

A diff is for a person: a unified diff of lines, recorded against now,
with long lines cut to a window around where they differ and at most
``MAX_DIFF_LINES`` lines.  An edit key is for grouping: a hash of the words
that changed (not of the whole text), with ids masked, so the same edit of
a prompt template gives one key across conversations whose tasks differ.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from typing import Any

from evaltape.recorder._shared import canonical_json

MAX_DIFF_LINES = 12
"""Lines of a diff shown; the rest are counted in a last line."""
MAX_LINE = 160
"""Characters of one diff line shown."""
MAX_TOKENS = 20_000
"""Texts with more words than this are keyed by their whole before and after."""

MISSING: Any = object()
"""A value absent from one of the two bodies."""

_IDS = re.compile(
    r"\b(?:call|toolu|fc|msg|resp|chatcmpl|srvtoolu|rs)_[A-Za-z0-9_-]+"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b[0-9a-fA-F]{16,}\b"
)
"""Ids that differ per session: API call and message ids, UUIDs, long hex digests."""
_TOKEN = re.compile(r"\w+|[^\w\s]")


def canonical(value: Any) -> str:
    """Compact JSON with sorted keys: equal values give equal texts."""
    return "<absent>" if value is MISSING else canonical_json(value)


MAX_ARGUMENTS = 120
"""Characters of tool call arguments shown in a headline."""


def shown_arguments(arguments: str) -> str:
    """Tool call arguments as one line of JSON (``{"path": "a.txt"}``), shortened."""
    try:
        text = json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        text = arguments
    return text if len(text) <= MAX_ARGUMENTS else text[: MAX_ARGUMENTS - 1] + "…"


def as_text(value: Any) -> str:
    """A string as it is, anything else as indented JSON (absent: empty)."""
    if value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


def focus(before: Any, after: Any) -> tuple[Any, Any]:
    """Descend into two JSON values while exactly one child differs.

    Two tool definitions that differ only in their description become the
    two descriptions, so the diff and the edit key are about that text.
    """
    while True:
        if isinstance(before, dict) and isinstance(after, dict):
            keys = [
                k for k in {**before, **after} if before.get(k, MISSING) != after.get(k, MISSING)
            ]
            if len(keys) != 1:
                return before, after
            before, after = before.get(keys[0], MISSING), after.get(keys[0], MISSING)
        elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            spots = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
            if len(spots) != 1:
                return before, after
            before, after = before[spots[0]], after[spots[0]]
        else:
            return before, after


def _first_offset(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _window(line: str, offset: int) -> str:
    """``line`` (sign first) cut to ``MAX_LINE`` characters around ``offset`` of its text."""
    if len(line) <= MAX_LINE:
        return line
    sign, body = line[0], line[1:]
    start = max(0, offset - MAX_LINE // 4)
    piece = body[start : start + MAX_LINE - 2]
    return sign + ("…" if start else "") + piece + ("…" if start + len(piece) < len(body) else "")


def _shorten(lines: list[str]) -> list[str]:
    """Cut long lines; a removed line and the added line replacing it share a window."""
    out = list(lines)
    i = 0
    while i < len(out):
        if not out[i].startswith("-"):
            out[i] = _window(out[i], 0)
            i += 1
            continue
        j = i
        while j < len(out) and out[j].startswith("-"):
            j += 1
        k = j
        while k < len(out) and out[k].startswith("+"):
            k += 1
        minus, plus = out[i:j], out[j:k]
        for t, line in enumerate(minus):
            other = plus[t] if t < len(plus) else ""
            out[i + t] = _window(line, _first_offset(line[1:], other[1:]))
        for t, line in enumerate(plus):
            other = minus[t] if t < len(minus) else ""
            out[j + t] = _window(line, _first_offset(line[1:], other[1:]))
        i = k
    return out


def text_diff(before: str, after: str) -> tuple[str, ...]:
    """A unified diff of two texts, recorded (``-``) against now (``+``), bounded."""
    a, b = before.splitlines(), after.splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=1))[2:]
    if not lines and before != after:
        lines = [
            "-" + json.dumps(before, ensure_ascii=False),
            "+" + json.dumps(after, ensure_ascii=False),
        ]
    lines = _shorten(lines)
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"… {cut} more diff line{'s' if cut > 1 else ''} cut"]
    return tuple(lines)


def value_diff(before: Any, after: Any) -> tuple[str, ...]:
    """``text_diff`` of the part of two JSON values that differs (see ``focus``)."""
    a, b = focus(before, after)
    return text_diff(as_text(a), as_text(b))


def masked(text: str) -> str:
    """``text`` with per-session ids replaced by ``<id>`` and runs of blanks by one space."""
    return " ".join(_IDS.sub("<id>", text).split())


def changed_words(before: str, after: str) -> list[list[str]]:
    """The runs of words that differ between two texts, ids masked: ``[[old, new], ...]``."""
    a, b = _TOKEN.findall(masked(before)), _TOKEN.findall(masked(after))
    if len(a) > MAX_TOKENS or len(b) > MAX_TOKENS:
        return [[masked(before), masked(after)]]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        [" ".join(a[i1:i2]), " ".join(b[j1:j2])]
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def value_changes(before: Any, after: Any) -> list[list[str]]:
    """``changed_words`` of the part of two JSON values that differs."""
    a, b = focus(before, after)
    return changed_words(as_text(a), as_text(b))


def edit_key(*parts: Any) -> str:
    """A 12-hex-digit hash of JSON-able parts (a kind, an aspect, changed words...)."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
