"""Compare two conversations item by item and say what changed.

Items are aligned in two passes: first identical items (so an inserted
message does not shift every later one), then, inside each stretch that
differs, items of the same slot (same role; for a tool result, an answer
to the same tool with the same arguments; for an assistant turn, the same
tool calls).  Aligned pairs that differ are changed turns; what is left is
added or dropped, and an item dropped in one place and added unchanged in
another has moved.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from evaltape.recorder._shared import Item

from .._match import first_difference_in
from ._model import ChangeKind, Finding
from ._text import (
    changed_words,
    edit_key,
    masked,
    shown_arguments,
    text_diff,
    value_changes,
    value_diff,
)

_PROMPT_ROLES = ("system", "developer")


def _align(
    before: Sequence[Item], after: Sequence[Item]
) -> tuple[list[tuple[Item, Item]], list[Item], list[Item]]:
    """(changed pairs, dropped items, added items), each in request order."""
    pairs: list[tuple[Item, Item]] = []
    dropped: list[Item] = []
    added: list[Item] = []
    exact = difflib.SequenceMatcher(
        None, [i.full for i in before], [i.full for i in after], autojunk=False
    )
    for tag, i1, i2, j1, j2 in exact.get_opcodes():
        if tag == "equal":
            continue
        a, b = before[i1:i2], after[j1:j2]
        slots = difflib.SequenceMatcher(
            None, [i.slot for i in a], [i.slot for i in b], autojunk=False
        )
        for tag2, k1, k2, l1, l2 in slots.get_opcodes():
            if tag2 == "equal":
                pairs.extend(zip(a[k1:k2], b[l1:l2], strict=True))
            else:
                dropped.extend(a[k1:k2])
                added.extend(b[l1:l2])
    return pairs, dropped, added


def _path(old: Item, new: Item) -> str:
    found = first_difference_in(new.raw, old.raw, new.path)
    return found.path if found is not None else new.path


def _prompt(aspect: str, old: Item | None, new: Item | None) -> Finding:
    """A changed, added or removed system prompt or user message."""
    before = old.text if old is not None else ""
    after = new.text if new is not None else ""
    if old is not None and new is not None and before == after:
        diff, words = value_diff(old.raw, new.raw), value_changes(old.raw, new.raw)
    else:
        diff, words = text_diff(before, after), changed_words(before, after)
    if old is not None and new is not None:
        path = _path(old, new)
    else:
        path = new.path if new is not None else old.path if old is not None else ""
    return Finding(
        kind=ChangeKind.HARNESS_TEXT,
        aspect=aspect,
        path=path,
        diff=diff,
        edit_key=edit_key(ChangeKind.HARNESS_TEXT.name, aspect, words),
    )


def _tool_result(old: Item, new: Item) -> Finding:
    call = new.answers or old.answers
    name = call.name if call is not None else ""
    args = shown_arguments(call.arguments) if call is not None else ""
    if old.text != new.text:
        diff, words = text_diff(old.text, new.text), changed_words(old.text, new.text)
    else:
        diff, words = value_diff(old.raw, new.raw), value_changes(old.raw, new.raw)
    return Finding(
        kind=ChangeKind.TOOL_RESULT,
        aspect="tool result",
        subject=name,
        path=_path(old, new),
        tool=name,
        arguments=args,
        diff=diff,
        edit_key=edit_key(ChangeKind.TOOL_RESULT.name, name, words),
    )


def _observation(old: Item, new: Item) -> Finding:
    """A changed user message sent after the model spoke: the harness's reply changed."""
    diff, words = text_diff(old.text, new.text), changed_words(old.text, new.text)
    if old.text == new.text:
        diff, words = value_diff(old.raw, new.raw), value_changes(old.raw, new.raw)
    after = new.after or old.after
    return Finding(
        kind=ChangeKind.TOOL_RESULT,
        aspect="observation",
        subject=new.label + (f', after "{after}"' if after else ""),
        path=_path(old, new),
        diff=diff,
        edit_key=edit_key(ChangeKind.TOOL_RESULT.name, "observation", words),
    )


def _conversation(
    what: str, change: str, item: Item, path: str, diff: tuple[str, ...], *extra: object
) -> Finding:
    """A conversation finding; its key names the change, never ids or positions."""
    tool = item.answers.name if item.answers is not None else ""
    text = masked(item.text) if item.role in ("user", *_PROMPT_ROLES) else ""
    shape = item.slot if item.role not in ("user", "tool", *_PROMPT_ROLES) else ()
    return Finding(
        kind=ChangeKind.CONVERSATION,
        aspect="conversation",
        subject=what,
        path=path,
        tool=tool,
        diff=diff,
        edit_key=edit_key(
            ChangeKind.CONVERSATION.name, change, item.role, tool, text, shape, extra
        ),
    )


def _changed(old: Item, new: Item) -> Finding:
    if old.role in _PROMPT_ROLES:
        return _prompt("system prompt", old, new)
    if old.role == "user":
        if old.observation or new.observation:
            return _observation(old, new)
        return _prompt("user prompt", old, new)
    if old.role == "tool":
        if _without_id(old.raw) != _without_id(new.raw):
            return _tool_result(old, new)
        what = f"{old.label} now answers {new.call_id}"
        diff = value_diff(old.raw, new.raw)
        return _conversation(what, "tool result id", old, _path(old, new), diff)
    diff, words = value_diff(old.raw, new.raw), value_changes(old.raw, new.raw)
    return _conversation(f"{new.label} changed", "changed", new, _path(old, new), diff, words)


def _without_id(raw: object) -> object:
    """A tool result's JSON without the id of the call it answers."""
    if not isinstance(raw, dict):
        return raw
    return {k: v for k, v in raw.items() if k not in ("tool_call_id", "tool_use_id", "call_id")}


def _moves(dropped: list[Item], added: list[Item]) -> list[tuple[Item, Item]]:
    """Dropped items that reappear unchanged among the added ones (both lists shrink)."""
    moved: list[tuple[Item, Item]] = []
    for old in list(dropped):
        twin = next((new for new in added if new.full == old.full), None)
        if twin is not None:
            moved.append((old, twin))
            dropped.remove(old)
            added.remove(twin)
    return moved


def compare_items(before: Sequence[Item], after: Sequence[Item]) -> list[Finding]:
    """Every change between two conversations, in request order (see module docs)."""
    pairs, dropped, added = _align(before, after)
    moved = _moves(dropped, added)
    findings = [_changed(old, new) for old, new in pairs]
    for old, new in moved:
        where = new.label.split(" (")[0] if new.role != "tool" else new.path
        findings.append(_conversation(f"{old.label} moved to {where}", "moved", old, new.path, ()))
    for old in dropped:
        if old.role in _PROMPT_ROLES:
            findings.append(_prompt("system prompt", old, None))
        else:
            gone = "no longer sent" if old.role == "tool" else "dropped"
            diff = text_diff(old.text, "") if old.text else ()
            findings.append(_conversation(f"{old.label} {gone}", gone, old, old.path, diff))
    for new in added:
        if new.role in _PROMPT_ROLES:
            findings.append(_prompt("system prompt", None, new))
        else:
            diff = text_diff("", new.text) if new.text else ()
            findings.append(_conversation(f"{new.label} added", "added", new, new.path, diff))
    return findings
