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
from typing import Any

import msgspec

from evaltape.recorder._adapters._json_fast import huge_int

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


# -- OpenAI Chat Completions chunks --------------------------------------------------


class ChatFunction(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ChatToolFragment(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: ChatFunction | None = None


class ChatDelta(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChatToolFragment] | None = None


class ChatChoice(msgspec.Struct):
    index: int = 0
    delta: ChatDelta | None = None
    finish_reason: str | None = None


class ChatChunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    choices: list[ChatChoice] | None = None


CHAT = msgspec.json.Decoder(list[bool | int | ChatChunk])


# -- Anthropic Messages events -------------------------------------------------------


class MessagesDelta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class MessagesEvent(msgspec.Struct):
    type: str | None = None
    index: int | None = None
    message: dict[str, Any] | None = None
    content_block: dict[str, Any] | None = None
    delta: MessagesDelta | None = None
    usage: dict[str, Any] | None = None


MESSAGES = msgspec.json.Decoder(list[bool | int | MessagesEvent])
