"""A request body split the way classification compares it.

Per API, a normalized body becomes conversation items (one per message,
tool call item or tool result, each with its JSON path), the tool
definitions by name, and the other top-level parameters.  The split follows
the recorder's adapters (Anthropic ``system`` and Responses ``instructions``
lead as a system item; each Anthropic ``tool_result`` block is an item of
its own) but keeps every item's raw JSON, so any difference is seen.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from evaltape.recorder import ToolCall

from ._text import canonical

CONVERSATION_KEYS: dict[str, tuple[str, ...]] = {
    "openai.chat": ("messages",),
    "openai.responses": ("instructions", "input"),
    "anthropic.messages": ("system", "messages"),
}
"""Top-level fields that hold the conversation, per API."""
TOOL_KEYS = ("tools", "functions")
"""Top-level fields that hold tool definitions (``functions``: legacy Chat Completions)."""
_TEXT_PARTS = ("text", "input_text", "output_text")
_INDEX = re.compile(r"^\w+\[(\d+)\]")


@attrs.frozen(kw_only=True)
class Item:
    """One conversation item of a request."""

    path: str
    """Its JSON path in the body (``messages[3]``, ``messages[2].content[0]``, ``system``)."""
    role: str
    """system, developer, user, assistant, tool (any tool result), or the item's type."""
    text: str = ""
    """Its text parts, joined by newlines."""
    calls: tuple[ToolCall, ...] = ()
    """Tool calls it carries (arguments as canonical JSON)."""
    call_id: str = ""
    """For a tool result: the id of the call it answers."""
    answers: ToolCall | None = None
    """For a tool result: the call it answers, when the same body holds it."""
    raw: Any = None
    """Its JSON, for exact comparison."""
    observation: bool = False
    """A user message sent after the model's first turn: the harness's reply to the
    model (a tool's output in a text/ReAct agent), not prompt text."""
    after: str = ""
    """For an observation: the last line of the model's turn it answers (shortened)."""

    @property
    def slot(self) -> tuple[str, ...]:
        """What makes two items the same turn, changeable text aside (for alignment)."""
        if self.role in ("system", "developer"):
            return ("system",)
        if self.role == "user":
            return ("user",)
        if self.role == "assistant":
            return ("assistant", *(f"{c.name} {c.arguments}" for c in self.calls))
        if self.role == "tool":
            if self.answers is not None:
                return ("tool", self.answers.name, self.answers.arguments)
            return ("tool", "#" + self.call_id)
        return ("other", self.role, canonical(self.raw))

    @property
    def full(self) -> tuple[str, ...]:
        """``slot`` plus the exact JSON: equal means identical items."""
        return (*self.slot, canonical(self.raw))

    @property
    def label(self) -> str:
        """How a report names it: ``tool result for call_1 (read)``, ``message 3 (user)``."""
        if self.role == "tool":
            name = self.answers.name if self.answers is not None else "?"
            return f"tool result for {self.call_id or '?'} ({name})"
        found = _INDEX.match(self.path)
        number = int(found.group(1)) + 1 if found else 1
        return f"message {number} ({self.role})"


@attrs.frozen(kw_only=True)
class View:
    """A request body split into conversation, tools and parameters."""

    items: tuple[Item, ...]
    """Conversation items in request order."""
    tools: dict[str, tuple[str, Any]]
    """Tool name -> (JSON path, definition), in request order."""
    params: dict[str, Any]
    """Every other top-level field."""


def text_of(content: Any) -> str:
    """A content string, or the text parts of a content list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") in _TEXT_PARTS
            and isinstance(p.get("text"), str)
        )
    return ""


def arguments(value: Any) -> str:
    """Tool call arguments (a JSON text or an object) as canonical JSON; bad JSON as it is."""
    if isinstance(value, str):
        try:
            return canonical(json.loads(value))
        except (ValueError, RecursionError):
            return value
    return canonical(value if value is not None else {})


def _call(call_id: Any, name: Any, args: Any) -> ToolCall:
    return ToolCall(id=str(call_id or ""), name=str(name or ""), arguments=arguments(args))


def _chat_item(path: str, m: Any) -> Item:
    if not isinstance(m, dict):
        return Item(path=path, role="invalid", raw=m)
    role = str(m.get("role", ""))
    content = text_of(m.get("content"))
    if role in ("tool", "function"):
        call_id = m.get("tool_call_id") or m.get("name") or ""
        return Item(path=path, role="tool", text=content, call_id=str(call_id), raw=m)
    calls: list[ToolCall] = []
    for c in m.get("tool_calls") or []:
        if isinstance(c, dict):
            fn = c.get("function") or c.get("custom") or {}
            fn = fn if isinstance(fn, dict) else {}
            calls.append(_call(c.get("id"), fn.get("name"), fn.get("arguments", fn.get("input"))))
    legacy = m.get("function_call")
    if isinstance(legacy, dict) and not calls:
        calls.append(_call(legacy.get("name"), legacy.get("name"), legacy.get("arguments")))
    return Item(path=path, role=role, text=content, calls=tuple(calls), raw=m)


def _chat(body: dict[str, Any]) -> list[Item]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return [] if messages is None else [Item(path="messages", role="invalid", raw=messages)]
    return [_chat_item(f"messages[{i}]", m) for i, m in enumerate(messages)]


def _responses(body: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    if "instructions" in body:
        value = body["instructions"]
        items.append(Item(path="instructions", role="system", text=text_of(value), raw=value))
    entries = body.get("input")
    if isinstance(entries, str):
        return [*items, Item(path="input", role="user", text=entries, raw=entries)]
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        path = f"input[{i}]"
        if not isinstance(entry, dict):
            items.append(Item(path=path, role="invalid", raw=entry))
            continue
        kind = entry.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            args = entry.get("arguments", entry.get("input"))
            call = _call(entry.get("call_id"), entry.get("name"), args)
            items.append(Item(path=path, role="assistant", calls=(call,), raw=entry))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = text_of(entry.get("output"))
            call_id = str(entry.get("call_id", ""))
            items.append(Item(path=path, role="tool", text=output, call_id=call_id, raw=entry))
        elif kind == "message":
            role, content = str(entry.get("role", "")), text_of(entry.get("content"))
            items.append(Item(path=path, role=role, text=content, raw=entry))
        else:
            items.append(Item(path=path, role=str(kind), raw=entry))
    return items


def _anthropic_message(i: int, m: Any) -> list[Item]:
    path = f"messages[{i}]"
    if not isinstance(m, dict) or not isinstance(m.get("content"), list):
        role = str(m.get("role", "")) if isinstance(m, dict) else "invalid"
        content = m.get("content") if isinstance(m, dict) else None
        return [Item(path=path, role=role, text=text_of(content), raw=m)]
    role, blocks = str(m.get("role", "")), m["content"]
    out: list[Item] = []
    rest: list[Any] = []
    calls: list[ToolCall] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result" and isinstance(block, dict):
            text = text_of(block.get("content"))
            call_id = str(block.get("tool_use_id", ""))
            item = Item(
                path=f"{path}.content[{j}]", role="tool", text=text, call_id=call_id, raw=block
            )
            out.append(item)
            continue
        if kind == "tool_use" and isinstance(block, dict):
            calls.append(_call(block.get("id"), block.get("name"), block.get("input", {})))
        rest.append(block)
    if rest or not out:
        raw = m if not out else {**m, "content": rest}
        out.append(Item(path=path, role=role, text=text_of(rest), calls=tuple(calls), raw=raw))
    return out


def _anthropic(body: dict[str, Any]) -> list[Item]:
    items: list[Item] = []
    if "system" in body:
        value = body["system"]
        items.append(Item(path="system", role="system", text=text_of(value), raw=value))
    messages = body.get("messages")
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        items.extend(_anthropic_message(i, m))
    return items


_READERS = {"openai.chat": _chat, "openai.responses": _responses, "anthropic.messages": _anthropic}


MAX_AFTER = 60
"""Characters of the model's turn an observation names (its last line)."""


def _last_line(item: Item) -> str:
    lines = [ln.strip() for ln in item.text.splitlines() if ln.strip()]
    if not lines and item.calls:
        return item.calls[-1].name
    line = lines[-1] if lines else ""
    return line if len(line) <= MAX_AFTER else line[: MAX_AFTER - 1] + "…"


def _resolve(items: list[Item]) -> tuple[Item, ...]:
    """Tool results with the call they answer, found by id in the same body, and user
    messages after the model's first turn marked as observations."""
    calls = {c.id: c for item in items for c in item.calls if c.id}
    out: list[Item] = []
    model: Item | None = None
    for item in items:
        if item.role == "tool":
            item = attrs.evolve(item, answers=calls.get(item.call_id))
        elif item.role == "user" and model is not None:
            item = attrs.evolve(item, observation=True, after=_last_line(model))
        elif item.role == "assistant":
            model = item
        out.append(item)
    return tuple(out)


def _tool_name(tool: Any, index: int) -> str:
    if not isinstance(tool, dict):
        return f"#{index + 1}"
    inner = tool.get("function") or tool.get("custom")
    name = inner.get("name") if isinstance(inner, dict) else tool.get("name")
    return str(name or tool.get("type") or f"#{index + 1}")


def view_of(api: str, body: dict[str, Any]) -> View:
    """The view of a normalized request body of one of the three APIs."""
    tools: dict[str, tuple[str, Any]] = {}
    for key in TOOL_KEYS:
        listed = body.get(key)
        for i, tool in enumerate(listed if isinstance(listed, list) else []):
            tools.setdefault(_tool_name(tool, i), (f"{key}[{i}]", tool))
    skip = {*CONVERSATION_KEYS[api], *TOOL_KEYS}
    params = {k: v for k, v in body.items() if k not in skip}
    return View(items=_resolve(_READERS[api](body)), tools=tools, params=params)
