"""A request body split the way classification compares it.

A normalized body becomes conversation items (one per message, tool call
item or tool result, each with its JSON path), the tool definitions by name,
and the other top-level parameters.  Each API's module in ``recorder/apis``
reads its conversation (``ApiSpec.conversation``), as its adapter reads the
request (Anthropic ``system`` and Responses ``instructions`` lead as a system
item; each Anthropic ``tool_result`` block is an item of its own) but keeping
every item's raw JSON, so any difference is seen; here the items are linked
(a tool result to its call) and the tools and parameters split off.
"""

from __future__ import annotations

from typing import Any

import attrs

from evaltape.recorder._shared import ApiSpec, Item

TOOL_KEYS = ("tools", "functions")
"""Top-level fields that hold tool definitions (``functions``: legacy Chat Completions)."""


@attrs.frozen(kw_only=True)
class View:
    """A request body split into conversation, tools and parameters."""

    items: tuple[Item, ...]
    """Conversation items in request order."""
    tools: dict[str, tuple[str, Any]]
    """Tool name -> (JSON path, definition), in request order."""
    params: dict[str, Any]
    """Every other top-level field."""


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


def view_of(api: ApiSpec, body: dict[str, Any]) -> View:
    """The view of a normalized request body of ``api``."""
    tools: dict[str, tuple[str, Any]] = {}
    for key in TOOL_KEYS:
        listed = body.get(key)
        for i, tool in enumerate(listed if isinstance(listed, list) else []):
            tools.setdefault(_tool_name(tool, i), (f"{key}[{i}]", tool))
    skip = {*api.conversation_keys, *TOOL_KEYS}
    params = {k: v for k, v in body.items() if k not in skip}
    return View(items=_resolve(api.conversation(body)), tools=tools, params=params)
