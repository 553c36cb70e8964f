"""The usual request body read from its bytes: only what changed is parsed, in C.

An agent's request is the one before with a few conversation items appended,
and often the very same fields around them.  ``quick`` checks that with byte
comparisons against the previous body's ``Layout`` and parses with msgspec
only the new items and whichever fields around the conversation changed:

- the *head*, the members before the conversation array (``{"model": ...,``),
  is taken over when its text recurs, else parsed as an object of its own
  (its text with the last comma turned into ``}``);
- the conversation array's items up to the previous body's last one are taken
  over as the very same objects when their text recurs at the array's start
  and is followed by ``,`` or ``]`` (so a number there did not grow);
- the *tail*, from the array's ``]`` to the end, is taken over when the body
  ends with the previous body's, or with one of the few before it (a session
  that asks with and without streaming alternates between two); else the new
  items and the tail are parsed as one object, the tail's members standing
  beside the new items (a member whose text recurs keeps its value: the tool
  schemas, when a flag after them changed).

Each of those pieces is valid JSON on its own exactly when the body is, and
parses to what ``json.loads`` gives the body for it (msgspec's values are
``json.loads``'s where it accepts a text; ``_json_fast.fast``), so the result
is ``json.loads(body)``.  Anything else gives None and the caller reads the
body the general way: a body whose conversation key appears twice or with a
member before it that does not parse as an object, a conversation that does
not start with the previous one, text msgspec refuses (NaN, lone surrogates,
huge integers, invalid UTF-8).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .._bodies import fast

_WS = b" \t\n\r"
_NOT_WS = re.compile(rb"[^ \t\n\r]")
_COMMA, _CLOSE = ord(","), ord("]")
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])


RECENT_TAILS = 4
"""Tails a layout remembers: a session that asks with and without streaming
alternates between two (``"stream": true`` is among the fields after the conversation)."""


class Tail:
    """A tail's text, its members' values and each member's text."""

    __slots__ = ("raws", "text", "values")

    def __init__(self, text: bytes, values: dict[str, Any], raws: dict[str, bytes]) -> None:
        self.text = text
        self.values = values
        self.raws = raws


class Layout:
    """Where a parsed body's pieces are, and their values, for the next body's reuse."""

    __slots__ = ("body", "head", "head_values", "items", "kept", "start", "tail", "tails")

    def __init__(
        self,
        body: bytes,
        head: int,
        head_values: dict[str, Any],
        start: int,
        kept: int,
        items: list[Any],
        tail: int,
        tails: tuple[Tail, ...],
    ) -> None:
        self.body = body
        self.head = head  # body[:head] is "{" and the head's members, with its last comma
        self.head_values = head_values
        self.start = start  # offset of the conversation array's "["
        self.kept = kept  # offset just past its last item (start + 1 if it has none)
        self.items = items
        self.tail = tail  # offset of the array's "]": body[tail:] is the tail
        self.tails = tails  # this body's tail first, then the last few other ones


class Key:
    """The conversation key of one API (``messages``, ``input``), as the walk finds it."""

    def __init__(self, name: str) -> None:
        quoted = msgspec.json.encode(name)
        self.name = name
        self.quoted = quoted
        self.member = re.compile(re.escape(quoted) + rb"[ \t\n\r]*:[ \t\n\r]*\[")
        self.again = re.compile(re.escape(quoted) + rb"[ \t\n\r]*:")
        self.prefix = b"{" + quoted + b":["

    @staticmethod
    def of(name: str) -> Key:
        """The key of ``name``: the one every session shares for the three APIs' names
        (it is only read), a new one for any other."""
        key = _KEYS.get(name)
        return key if key is not None else Key(name)


_KEYS: dict[str, Key] = {name: Key(name) for name in ("messages", "input")}
"""The keys of the supported APIs' conversations, made once at import."""


def quick(key: Key, data: bytes, last: Layout | None) -> tuple[dict[str, Any], Layout] | None:
    """``(json.loads(data), its layout)`` for a body that starts with ``{`` and reads
    as the module says; None where the general way must read it."""
    try:
        return _quick(key, data, last)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None


def _quick(key: Key, data: bytes, last: Layout | None) -> tuple[dict[str, Any], Layout] | None:
    found = key.member.search(data)
    if found is None:
        return None
    start = found.end() - 1
    before = data[: found.start()].rstrip(_WS)
    if before == b"{":
        head, head_values = 1, {}
    elif before.endswith(b","):
        head = len(before)
        if last is not None and last.head == head and data.startswith(memoryview(last.body)[:head]):
            head_values = last.head_values
        else:
            value = fast(before[:-1] + b"}")
            if type(value) is not dict:
                return None
            head_values = value  # (the key among them: the array's value comes last)
    else:
        return None
    items: list[Any] = []
    resume = start + 1  # where the text after the taken-over items resumes
    comma = False
    if (
        last is not None
        and last.items
        and data.startswith(memoryview(last.body)[last.start : last.kept], start)
    ):
        end = start + last.kept - last.start
        after = _NOT_WS.search(data, end)
        if after is None:
            return None
        mark = data[after.start()]
        if mark == _COMMA:
            comma, resume = True, after.start() + 1
        elif mark == _CLOSE:
            resume = end
        else:  # a number that grew, or anything else
            return None
        items = last.items
    return _rest(key, data, last, head, head_values, start, resume, items, comma)


def _rest(
    key: Key,
    data: bytes,
    last: Layout | None,
    head: int,
    head_values: dict[str, Any],
    start: int,
    resume: int,
    items: list[Any],
    comma: bool,
) -> tuple[dict[str, Any], Layout] | None:
    """The body from ``resume`` on: the new items (after the comma that follows the
    taken-over ones, if ``comma``), the array's ``]`` and the tail."""
    tail = -1
    found: Tail | None = None
    for known in last.tails if last is not None else ():
        size = len(known.text)
        if len(data) - size >= resume and data.endswith(known.text):
            tail, found = len(data) - size, known
            break
    if found is not None:
        new_text = data[resume:tail]
        new = fast(b"[" + new_text + b"]") if new_text.strip(_WS) else []
    else:
        members = _MEMBERS.decode(key.prefix + data[resume:])
        raw = bytes(members.pop(key.name))
        tail = resume + len(raw) - 2
        # The value read must be the array at ``resume`` (a value's text has one end),
        # and no member after it may repeat the key (json.loads keeps the last).
        if not data.startswith(memoryview(raw)[1:], resume) or (
            data.find(key.quoted, tail) >= 0 and key.again.search(data, tail)
        ):
            return None
        new = fast(raw)
        raws = {name: bytes(value) for name, value in members.items()}
        seen = last.tails[0] if last is not None else Tail(b"", {}, {})
        values = {
            name: seen.values[name] if seen.raws.get(name) == text else fast(text)
            for name, text in raws.items()
        }
        found = Tail(data[tail:], values, raws)
    if type(new) is not list or (comma and not new):  # "[..., ]" is not JSON
        return None
    whole = items + new if items else new
    kept = tail
    while data[kept - 1] in _WS:
        kept -= 1
    if not whole:
        kept = start + 1
    out = dict(head_values)
    out[key.name] = whole
    out.update(found.values)
    others = tuple(t for t in last.tails if t is not found) if last is not None else ()
    tails = (found, *others[: RECENT_TAILS - 1])
    return out, Layout(data, head, head_values, start, kept, whole, tail, tails)
