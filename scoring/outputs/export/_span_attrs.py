"""Span attributes shared by the attempt's spans: provider, usage, cost, server and messages."""

from __future__ import annotations

import json
from collections.abc import Iterable
from urllib.parse import urlsplit

from evaltape.recorder import Message, ModelCall, Usage

from ._span_model import Attrs


def provider_name(calls: Iterable[ModelCall], url: str = "") -> str:
    """``openai``, ``anthropic``, or ``_OTHER`` (the conventions' value for anything else)."""
    for call in calls:
        if call.api.startswith("openai"):
            return "openai"
        if call.api.startswith("anthropic"):
            return "anthropic"
    host = (urlsplit(url).hostname or "").lower()
    if host.endswith("openai.com"):
        return "openai"
    if host.endswith("anthropic.com"):
        return "anthropic"
    return "_OTHER"


def usage_attrs(usage: Usage) -> Attrs:
    """``gen_ai.usage.*`` of ``usage``; none when the API reported no usage."""
    if not usage.reported and usage.total_tokens == 0:
        return ()
    return (
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    )


def cost_attrs(cost: float | None) -> Attrs:
    """The cost in USD, as Langfuse reads it and as a plain attribute; none when unknown."""
    if cost is None:
        return ()
    return (
        ("langfuse.observation.cost_details", json.dumps({"total": cost})),
        ("evaltape.cost_usd", cost),
    )


MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
"""Request fields that cap the reply's tokens (Chat Completions, its newer name, Responses)."""


def max_tokens_attrs(body: bytes) -> Attrs:
    """``gen_ai.request.max_tokens`` when the request's JSON body set a limit, else none."""
    try:
        data = json.loads(body) if body else None
    except ValueError:
        return ()
    if not isinstance(data, dict):
        return ()
    for name in MAX_TOKENS_FIELDS:
        limit = data.get(name)
        if isinstance(limit, int) and not isinstance(limit, bool):
            return (("gen_ai.request.max_tokens", limit),)
    return ()


def server_attrs(url: str) -> Attrs:
    parts = urlsplit(url)
    if not parts.hostname:
        return ()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (("server.address", parts.hostname), ("server.port", port))


def messages_json(messages: Iterable[Message]) -> str:
    items = []
    for m in messages:
        parts: list[dict[str, object]] = []
        if m.role == "tool":
            parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.text})
        elif m.text:
            parts.append({"type": "text", "content": m.text})
        for call in m.tool_calls:
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
        items.append({"role": m.role, "parts": parts})
    return json.dumps(items, ensure_ascii=False)


def output_json(call: ModelCall) -> str:
    message = Message(role="assistant", text=call.output_text, tool_calls=call.tool_calls)
    data = json.loads(messages_json((message,)))
    data[0]["finish_reason"] = call.finish_reason
    return json.dumps(data, ensure_ascii=False)
