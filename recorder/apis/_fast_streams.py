"""Typed fast paths for the usual stream events: one C-level parse per response.

Decoding a streamed response event by event in Python (``json.loads`` per
event, then ``dict.get`` and ``isinstance`` on every field) is most of a
fold's time.  Here each stream's events are parsed in one call straight into
typed records (``msgspec`` Structs) that name only the fields the adapters
read, so the walk that joins the deltas touches attributes of known types.

These paths are exact or absent: a stream with anything they do not model
(a field of another type than usual, an error event, the legacy
``function_call``, an event that is not one JSON object) gives ``None``, and
the adapter reads it the general way, which is the reference.  Where they
give a call it equals the general path's (tests/test_fold_reference.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import msgspec

from ._bodies import huge_int

_TAGS: tuple[tuple[str, Any], ...] = (
    ("false", False),
    ("true", True),
    ("9007199254740993", 2**53 + 1),
)
"""Values that mark each payload's place in a batch, with their only spelling
(the same proof as ``_sse._batch``)."""


def batch(
    payloads: Sequence[str],
    decoder: msgspec.json.Decoder[Any],
    kind: type,
    refuse: tuple[str, ...] = (),
) -> list[Any] | None:
    """Each payload decoded as one ``kind``, in one parse; None if any is not exactly that,
    or if any payload holds one of the texts ``refuse`` names."""
    n = len(payloads)
    for spelling, tag in _TAGS:
        joined = f"[{spelling}," + f",{spelling},".join(payloads) + "]"
        if any(r in joined for r in refuse) or huge_int(joined):
            return None
        if joined.count(spelling) != n:
            continue
        try:
            items = decoder.decode(joined)
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            return None
        if len(items) != 2 * n:
            return None
        tags = items[::2]
        values: list[Any] = items[1::2]
        if set(map(type, tags)) != {type(tag)} or tags.count(tag) != n:
            return None
        if set(map(type, values)) != {kind}:
            return None
        return values
    return None


# -- straight from the body's bytes ---------------------------------------------------
# The usual stream is framed so regularly that its events can be cut out with a few
# C-level passes over the bytes, without splitting the body into Python strings:
# each event's JSON is one line, every line starts with "{", and the lines are
# parsed in one call (``Decoder.decode_lines``, which parses each line on its own,
# so a line that gives one value is one event).  A body framed any other way (a CR,
# a comment, a field other than ``event``/``data``, an event over several lines, an
# event that is not an object) is left to ``parse_sse``.

DONE = b"\n\ndata: [DONE]\n\n"
_DATA = b"data: {"


def data_events(body: bytes, decoder: msgspec.json.Decoder[Any]) -> list[Any] | None:
    """The events of a body of one-line ``data: {...}`` events closed by ``data: [DONE]``
    and nothing after it, decoded by ``decoder`` (one record type); None for any other
    body, or an event the records refuse."""
    if not (body.startswith(_DATA) and body.endswith(DONE)) or b"\r" in body:
        return None
    pieces = body.split(b"\n\n" + _DATA)  # (one pass: a replace takes two)
    cuts = len(pieces) - 1
    # Every line end is one of the cuts' two or the [DONE] event's four, so no event
    # spans lines or is blank, and none before the last is a [DONE] that ends the stream.
    if body.count(b"\n") != 2 * cuts + 4:
        return None
    text = b"\n{".join(pieces)
    return _lines(memoryview(text)[len(_DATA) - 1 : len(text) - len(DONE)], cuts + 1, decoder, body)


def named_events(body: bytes, decoder: msgspec.json.Decoder[Any]) -> tuple[bytes, list[Any]] | None:
    """``(event lines, events)`` of a body of ``event: NAME`` / ``data: {...}`` line pairs,
    each pair followed by a blank line: the ``event:`` lines joined by line ends (which
    ``event_names`` reads), and the data decoded by ``decoder``; None for any other body,
    or an event the records refuse."""
    if not body.endswith(b"\n\n") or b"\r" in body:
        return None
    lines = body.split(b"\n")
    n = len(lines) // 3
    if len(lines) != 3 * n + 1 or any(lines[2 : 3 * n : 3]) or lines[-1]:
        return None
    heads = b"\n".join(lines[0 : 3 * n : 3])
    datas = b"\n".join(lines[1 : 3 * n : 3])
    pieces = datas.split(b"\n" + _DATA)
    # No line holds a line end, so these count the lines that start so.
    if not (
        heads.startswith(b"event: ")
        and heads.count(b"\nevent: ") == n - 1
        and datas.startswith(_DATA)
        and len(pieces) == n
    ):
        return None
    text = b"\n{".join(pieces)
    values = _lines(memoryview(text)[len(_DATA) - 1 :], n, decoder, text)
    return None if values is None else (heads, values)


def event_names(heads: bytes) -> tuple[str, ...]:
    """The names of ``named_events``' event lines, decoded at once as ``parse_sse`` decodes
    the whole body (invalid UTF-8 replaced)."""
    return tuple(heads.decode("utf-8", "replace")[7:].split("\nevent: "))


def _lines(
    text: bytes | memoryview, n: int, decoder: msgspec.json.Decoder[Any], whole: bytes
) -> list[Any] | None:
    """The values of ``n`` lines that each start with "{"; None unless each is exactly one
    value of the decoder's type, as ``json.loads`` reads it.  ``whole`` holds the lines'
    digits in the same runs (the body they were cut from)."""
    if huge_int(whole):
        return None
    try:
        values: list[Any] = decoder.decode_lines(text)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    # No line is blank, so each gives a value at least: n values means one a line.
    return values if len(values) == n else None


# -- OpenAI Chat Completions chunks --------------------------------------------------
# The records hold nothing that refers back to them, so the cycle collector does not
# track them (``gc=False``): thousands are made per session.


class ChatFunction(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ChatToolFragment(msgspec.Struct, gc=False):
    index: int | None = None
    id: str | None = None
    function: ChatFunction | None = None


class ChatDelta(msgspec.Struct, gc=False):
    function_call: msgspec.Raw = msgspec.Raw()
    """The legacy call, which only the general path reads (present: not empty)."""
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChatToolFragment] | None = None


class ChatChoice(msgspec.Struct, gc=False):
    index: int = 0
    delta: ChatDelta | None = None
    finish_reason: str | None = None


class ChatChunk(msgspec.Struct, gc=False):
    error: msgspec.Raw = msgspec.Raw()
    """An error chunk, which only the general path reads (present: not empty)."""
    id: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    choices: list[ChatChoice] | None = None


CHAT = msgspec.json.Decoder(list[bool | int | ChatChunk])
CHAT_LINES = msgspec.json.Decoder(ChatChunk)


# -- Anthropic Messages events -------------------------------------------------------


class MessagesDelta(msgspec.Struct, gc=False):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class MessageHead(msgspec.Struct, gc=False):
    """What the walk reads of ``message_start``'s message (any JSON value each, as a
    dict would hold it; the rest is skipped, not built)."""

    id: Any = None
    model: Any = None
    usage: Any = None


class MessagesEvent(msgspec.Struct, gc=False):
    type: Annotated[str, msgspec.Meta(min_length=1)]
    """Required: the walk reads an event by its type (one without takes the general
    walk, which reads it by its event name)."""
    index: int | None = None
    message: MessageHead | None = None
    content_block: dict[str, Any] | None = None
    delta: MessagesDelta | None = None
    usage: dict[str, Any] | None = None


MESSAGES = msgspec.json.Decoder(list[bool | int | MessagesEvent])
MESSAGES_LINES = msgspec.json.Decoder(MessagesEvent)
