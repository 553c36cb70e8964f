"""OpenAI Responses (``POST .../responses``), JSON and streamed.

The Responses API has no finish reason; the decoded call carries the
response ``status`` ("completed", "failed") or, for an incomplete response,
the reason it gives ("max_output_tokens").  Separate output messages are
joined by newlines.  A streamed call takes its output from the terminal
``response.completed`` event when that event lists it, otherwise from the
items and deltas seen so far (a stream cut short).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ._bodies import (
    SseStream,
    arr,
    count,
    decode_payloads,
    obj,
    parts_text,
    raw_json,
    stream_error,
    text,
    usd,
)
from ._model import (
    NO_USAGE,
    Calling,
    Message,
    ModelCall,
    ToolCall,
    Usage,
    answered,
    reported_usage,
    tool_call,
)
from ._spec import OPENAI_DROPPED, ApiSpec, Item, call_item, fold_messages, text_of
from .reuse._session import Memo

API: Final = "openai.responses"
"""OpenAI Responses (``POST .../responses``)."""
CONVERSATION: Final = "input"
"""The request's array of conversation items."""
_TEXT_PARTS = ("input_text", "output_text", "text")
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_DELTAS = {
    "response.output_text.delta": "message",
    "response.refusal.delta": "message",
    "response.function_call_arguments.delta": "function_call",
    "response.custom_tool_call_input.delta": "custom_tool_call",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
}
"""Delta events, and the type of item each one grows."""


def _item_call(item: dict[str, Any]) -> ToolCall | None:
    kind = item.get("type")
    if kind == "function_call":
        args = item.get("arguments")
    elif kind == "custom_tool_call":
        args = item.get("input")
    else:
        return None
    return tool_call(text(item.get("call_id")), text(item.get("name")), raw_json(args))


def _input_messages(body: dict[str, Any]) -> tuple[Message, ...]:
    messages: list[Message] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append(Message(role="system", text=instructions))
    items = body.get("input")
    if isinstance(items, str):
        return (*messages, Message(role="user", text=items))
    for item in arr(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        call = _item_call(item)
        if call is not None:
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant" and not last.tool_call_id:
                messages[-1] = attrs.evolve(last, tool_calls=(*last.tool_calls, call))
            else:
                messages.append(Message(role="assistant", tool_calls=(call,)))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append(
                Message(
                    role="tool",
                    text=parts_text(item.get("output"), _TEXT_PARTS),
                    tool_call_id=text(item.get("call_id")),
                    name=text(item.get("name")),
                )
            )
        elif kind == "message":
            messages.append(
                Message(
                    role=text(item.get("role")), text=parts_text(item.get("content"), _TEXT_PARTS)
                )
            )
    return tuple(messages)


def read_request(body: dict[str, Any], memo: Memo[Message] | None = None) -> ModelCall:
    """The request side of a call: model, instructions and input items, tools offered.

    Input items merge into messages across items, so ``memo`` goes unused.
    """
    tools = [
        text(t.get("name")) if t.get("type") in ("function", "custom") else text(t.get("type"))
        for t in arr(body.get("tools"))
        if isinstance(t, dict)
    ]
    return ModelCall(
        api=API,
        model_requested=text(body.get("model")),
        input_messages=_input_messages(body),
        tools_offered=tuple(t for t in tools if t),
    )


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return NO_USAGE
    details = obj(value.get("input_tokens_details"))
    return reported_usage(
        input_tokens=count(value.get("input_tokens")),
        output_tokens=count(value.get("output_tokens")),
        cache_read_tokens=count(details.get("cached_tokens")),
        cache_write_tokens=count(details.get("cache_write_tokens")),
        reasoning_tokens=count(obj(value.get("output_tokens_details")).get("reasoning_tokens")),
        reported_cost=usd(value.get("cost")),
    )


def _outputs(items: list[Any]) -> tuple[str, str, tuple[ToolCall, ...]]:
    """(text, thinking, tool calls) of a list of output items."""
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        call = _item_call(item)
        if call is not None:
            calls.append(call)
        elif kind == "message":
            parts = [p for p in arr(item.get("content")) if isinstance(p, dict)]
            texts.append("".join(text(p.get("text")) + text(p.get("refusal")) for p in parts))
        elif kind == "reasoning":
            pieces = arr(item.get("summary")) + arr(item.get("content"))
            thinking.append("\n".join(text(obj(p).get("text")) for p in pieces))
    return (
        "\n".join(t for t in texts if t),
        "\n".join(t for t in thinking if t),
        tuple(calls),
    )


def _finish(response: dict[str, Any]) -> str:
    status = text(response.get("status"))
    reason = text(obj(response.get("incomplete_details")).get("reason"))
    return reason if status == "incomplete" and reason else status


def _failure(response: dict[str, Any]) -> str:
    error = response.get("error")
    if isinstance(error, dict) and error:
        return stream_error({"error": error}, "response failed")
    return "response failed" if response.get("status") == "failed" else ""


def read_response(call: Calling, body: Any) -> ModelCall:
    """Add what a JSON ``response`` object says."""
    response = obj(body)
    output, thinking, calls = _outputs(arr(response.get("output")))
    return answered(
        call,
        model_responded=text(response.get("model")),
        response_id=text(response.get("id")),
        output_text=output,
        thinking=thinking,
        tool_calls=calls,
        finish_reason=_finish(response),
        usage=_usage(response.get("usage")),
        error=_failure(response) or ("" if response else "response body is not a JSON object"),
    )


class _Item:
    """An output item being assembled from stream events."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.item = item
        self.deltas: list[str] = []
        self.done = False

    def assembled(self) -> dict[str, Any]:
        if self.done:
            return self.item
        joined = "".join(self.deltas)
        kind = self.item.get("type", "message")
        if kind == "function_call":
            return {**self.item, "arguments": joined or text(self.item.get("arguments"))}
        if kind == "custom_tool_call":
            return {**self.item, "input": joined or text(self.item.get("input"))}
        if kind == "reasoning":
            return {**self.item, "summary": [{"text": joined}], "content": []}
        if kind == "message":
            return {**self.item, "type": kind, "content": [{"type": "output_text", "text": joined}]}
        return self.item


def read_stream(call: Calling, stream: SseStream, *, batch: bool = True) -> ModelCall:
    """Add what a stream of Responses events says.

    ``batch=False`` parses the events one by one; the call is the same either way.
    """
    items: dict[int, _Item] = {}
    final: dict[str, Any] = {}
    started: dict[str, Any] = {}
    terminal = problem = ""
    values, problems = decode_payloads(stream.payloads, "stream event", batch=batch)
    for n, (name, data) in enumerate(zip(stream.names, values, strict=True)):
        bad = problems[n] if problems is not None else ""
        if bad or not isinstance(data, dict):
            problem = problem or bad or f"stream event {n} is not a JSON object"
            continue
        kind = text(data.get("type")) or name
        index = data.get("output_index")
        slot = items.get(index) if isinstance(index, int) else None
        if kind in ("response.created", "response.in_progress"):
            started = obj(data.get("response")) or started
        elif kind == "response.output_item.added" and isinstance(index, int):
            items[index] = _Item(dict(obj(data.get("item"))))
        elif kind == "response.output_item.done" and isinstance(index, int):
            items.setdefault(index, _Item({})).item = dict(obj(data.get("item")))
            items[index].done = True
        elif kind in _DELTAS and isinstance(index, int):
            if slot is None:  # its output_item.added event is missing
                slot = items[index] = _Item({"type": _DELTAS[kind]})
            slot.deltas.append(text(data.get("delta")))
        elif kind in _TERMINAL:
            terminal, final = kind, obj(data.get("response"))
        elif kind == "error":
            problem = problem or stream_error(data)
    response = final or started
    listed = arr(final.get("output"))
    if not listed:
        listed = [items[i].assembled() for i in sorted(items)]
    output, thinking, calls = _outputs(listed)
    if not terminal and not problem:
        problem = "stream cut short: it ended before response.completed"
    return answered(
        call,
        model_responded=text(response.get("model")),
        response_id=text(response.get("id")),
        output_text=output,
        thinking=thinking,
        tool_calls=calls,
        finish_reason=_finish(final) if terminal else "",
        usage=_usage(final.get("usage")),
        error=problem or _failure(final),
    )


# -- recognising, matching and the conversation view ------------------------------------


def _fold(body: dict[str, Any]) -> dict[str, Any]:
    if "input" not in body:
        return body
    return {**body, "input": fold_messages(body["input"], "content", "input_text")}


def _entry(path: str, entry: Any) -> Item:
    if not isinstance(entry, dict):
        return Item(path=path, role="invalid", raw=entry)
    kind = entry.get("type", "message")
    if kind in ("function_call", "custom_tool_call"):
        args = entry.get("arguments", entry.get("input"))
        call = call_item(entry.get("call_id"), entry.get("name"), args)
        return Item(path=path, role="assistant", calls=(call,), raw=entry)
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = text_of(entry.get("output"))
        call_id = str(entry.get("call_id", ""))
        return Item(path=path, role="tool", text=output, call_id=call_id, raw=entry)
    if kind == "message":
        role, content = str(entry.get("role", "")), text_of(entry.get("content"))
        return Item(path=path, role=role, text=content, raw=entry)
    return Item(path=path, role=str(kind), raw=entry)


def _conversation(body: dict[str, Any]) -> list[Item]:
    """``instructions`` lead as a system item, as ``read_request`` reads them."""
    items: list[Item] = []
    if "instructions" in body:
        value = body["instructions"]
        items.append(Item(path="instructions", role="system", text=text_of(value), raw=value))
    entries = body.get("input")
    if isinstance(entries, str):
        return [*items, Item(path="input", role="user", text=entries, raw=entries)]
    entries = entries if isinstance(entries, list) else []
    return [*items, *(_entry(f"input[{i}]", entry) for i, entry in enumerate(entries))]


SPEC: Final = ApiSpec(
    name=API,
    path_suffix="/responses",
    provider="openai",
    conversation_keys=("instructions", "input"),
    dropped=OPENAI_DROPPED,
    fold=_fold,
    conversation=_conversation,
)
"""OpenAI Responses as the registry lists it."""
