"""Say what changed between a recorded request body and the one sent now.

``classify`` compares the two bodies after ``normalize_body`` (key order and
number formatting never count) and reports every change it finds as a
``Finding`` of one of three kinds (``ChangeKind``), the most serious first:
a tool result that differs, a conversation the harness reshaped, or text
the harness writes (system and user prompt, tool definitions, parameters).
It is pure: bodies in, a ``Classification`` out.
"""

from __future__ import annotations

import json
from typing import Any

from evaltape.recorder._shared import ApiSpec, api_named

from .._match import first_difference_in, normalize_body, parse_json
from ._conversation import compare_items
from ._model import ChangeKind, Classification, Finding
from ._text import (
    MISSING,
    changed_words,
    edit_key,
    text_diff,
    value_changes,
    value_diff,
)
from ._view import TOOL_KEYS, View, view_of

MESSAGE_KEYS = ("messages", "input", "contents", "prompt", "system", "instructions")
"""Top-level fields of an unknown API that are taken to hold the conversation."""


class _NotJson:
    """A body that is not JSON, kept as bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data


def _load(api: str, body: bytes | Any) -> Any:
    """The normalized form of a body given as bytes or as a parsed JSON value."""
    if isinstance(body, bytes | bytearray | memoryview):
        data = bytes(body)
        try:
            return normalize_body(api, parse_json(data)) if data else None
        except (ValueError, RecursionError):
            return _NotJson(data)
    # Round-trip a parsed value so its numbers compare as parse_json's do.
    return normalize_body(api, parse_json(json.dumps(body).encode()))


def _path_of(sent: Any, recorded: Any, path: str) -> str:
    if sent is MISSING or recorded is MISSING:  # added or removed as a whole: its own path
        return path
    found = first_difference_in(sent, recorded, path)
    return found.path if found is not None else path


def _harness(aspect: str, subject: str, path: str, old: Any, new: Any, tool: str = "") -> Finding:
    return Finding(
        kind=ChangeKind.HARNESS_TEXT,
        aspect=aspect,
        subject=subject,
        path=_path_of(new, old, path),
        tool=tool,
        diff=value_diff(old, new),
        edit_key=edit_key(ChangeKind.HARNESS_TEXT.name, aspect, subject, value_changes(old, new)),
    )


def _tools(before: View, after: View) -> list[Finding]:
    findings = []
    for name in [*after.tools, *(n for n in before.tools if n not in after.tools)]:
        old_path, old = before.tools.get(name, ("", MISSING))
        new_path, new = after.tools.get(name, ("", MISSING))
        if old != new:
            path = new_path or old_path
            findings.append(_harness("tool definitions", name, path, old, new, tool=name))
    return findings


def _params(before: dict[str, Any], after: dict[str, Any]) -> list[Finding]:
    return [
        _harness("parameters", key, key, before.get(key, MISSING), after.get(key, MISSING))
        for key in [*after, *(k for k in before if k not in after)]
        if before.get(key, MISSING) != after.get(key, MISSING)
    ]


def _anywhere(recorded: Any, sent: Any, kind: ChangeKind, aspect: str) -> Finding:
    """A finding for a difference no finer rule explains: its first JSON path."""
    found = first_difference_in(sent, recorded)
    path = found.path if found is not None else "<body>"
    subject = f"request differs at {path}" if kind is ChangeKind.CONVERSATION else "order"
    return Finding(
        kind=kind,
        aspect=aspect,
        subject=subject,
        path=path,
        diff=text_diff(found.recorded, found.sent) if found is not None else (),
        edit_key=edit_key(kind.name, aspect, path, value_changes(recorded, sent)),
    )


def _known(api: ApiSpec, recorded: dict[str, Any], sent: dict[str, Any]) -> list[Finding]:
    before, after = view_of(api, recorded), view_of(api, sent)
    findings = [
        *compare_items(before.items, after.items),
        *_tools(before, after),
        *_params(before.params, after.params),
    ]
    if findings:
        return findings
    # Same items, tools and parameters, yet different bodies: an order changed.
    tools = [k for k in TOOL_KEYS if recorded.get(k) != sent.get(k)]
    if tools:
        return [_anywhere(recorded.get(tools[0]), sent.get(tools[0]), *_TOOLS_ORDER)]
    keys = api.conversation_keys
    return [_anywhere({k: recorded.get(k) for k in keys}, {k: sent.get(k) for k in keys}, *_CONV)]


_TOOLS_ORDER = (ChangeKind.HARNESS_TEXT, "tool definitions")
_CONV = (ChangeKind.CONVERSATION, "conversation")


def _unknown(recorded: Any, sent: Any) -> list[Finding]:
    """An API without a view: parameters if only non-message fields differ."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        differ = [
            k for k in {**sent, **recorded} if recorded.get(k, MISSING) != sent.get(k, MISSING)
        ]
        if differ and not any(k in MESSAGE_KEYS for k in differ):
            return _params(recorded, sent)
    return [_anywhere(recorded, sent, *_CONV)]


def _not_json(recorded: Any, sent: Any) -> Finding:
    def text(value: Any) -> str:
        if isinstance(value, _NotJson):
            return value.data.decode("utf-8", "replace")
        return json.dumps(value, ensure_ascii=False)

    before, after = text(recorded), text(sent)
    return Finding(
        kind=ChangeKind.CONVERSATION,
        aspect="conversation",
        subject="request body is not JSON",
        path="<body>",
        diff=text_diff(before, after),
        edit_key=edit_key(ChangeKind.CONVERSATION.name, "not json", changed_words(before, after)),
    )


def classify(api: str, recorded: bytes | Any, sent: bytes | Any) -> Classification:
    """What changed from the ``recorded`` request body to the one ``sent`` now.

    ``api`` is ``api_of(path)``: ``openai.chat``, ``openai.responses``,
    ``anthropic.messages``, or anything else for an API without a view.
    Bodies are raw bytes or parsed JSON values.
    """
    before, after = _load(api, recorded), _load(api, sent)
    if isinstance(before, _NotJson) or isinstance(after, _NotJson):
        same = isinstance(before, _NotJson) and isinstance(after, _NotJson)
        if same and before.data == after.data:
            return Classification.of([])
        return Classification.of([_not_json(before, after)])
    if before == after:
        return Classification.of([])
    spec = api_named(api)
    if spec is not None and isinstance(before, dict) and isinstance(after, dict):
        return Classification.of(_known(spec, before, after))
    return Classification.of(_unknown(before, after))
