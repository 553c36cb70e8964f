"""Anthropic Messages (``POST .../v1/messages``), JSON and streamed.

Anthropic's ``input_tokens`` leaves out cached input; the decoded usage adds
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` back so that
every API reports input the same way.  Text blocks of one response are
joined without a separator (citations split prose into many blocks).  Only
client ``tool_use`` blocks are tool calls; server tools (web search) run at
the provider and are not.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from _fold_reference._reuse import Memo
from _fold_reference._sse import (
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
from evaltape.recorder.apis._model import Message, ModelCall, ToolCall, Usage

API: Final = "anthropic.messages"
CONVERSATION: Final = "messages"
"""The request's array of conversation items."""


def _tool_use(block: dict[str, Any], arguments: str | None = None) -> ToolCall:
    return ToolCall(
        id=text(block.get("id")),
        name=text(block.get("name")),
        arguments=raw_json(block.get("input", {})) if arguments is None else arguments,
    )


def _messages(m: dict[str, Any]) -> list[Message]:
    """One API message as normalized messages: each tool_result block becomes its own."""
    role = text(m.get("role"))
    content = m.get("content")
    if isinstance(content, str):
        return [Message(role=role, text=content)]
    out: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in arr(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(text(block.get("text")))
        elif kind == "tool_use":
            calls.append(_tool_use(block))
        elif kind == "tool_result":
            out.append(
                Message(
                    role="tool",
                    text=parts_text(block.get("content"), ("text",)),
                    tool_call_id=text(block.get("tool_use_id")),
                )
            )
    if texts or calls or not out:
        out.append(Message(role=role, text="\n".join(texts), tool_calls=tuple(calls)))
    return out


def read_request(body: dict[str, Any], memo: Memo[list[Message]] | None = None) -> ModelCall:
    """The request side of a call: model, system prompt and messages, tools offered.

    ``memo`` keeps the normalized messages of earlier requests of the session.
    """
    memo = memo if memo is not None else Memo()
    messages: list[Message] = []
    system = parts_text(body.get("system"), ("text",))
    if system:
        messages.append(Message(role="system", text=system))
    for m in arr(body.get("messages")):
        if isinstance(m, dict):
            messages.extend(memo.get(m, _messages))
    tools = [text(t.get("name")) for t in arr(body.get("tools")) if isinstance(t, dict)]
    return ModelCall(
        api=API,
        model_requested=text(body.get("model")),
        input_messages=tuple(messages),
        tools_offered=tuple(t for t in tools if t),
    )


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return Usage.unknown()
    read = count(value.get("cache_read_input_tokens"))
    written = count(value.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=count(value.get("input_tokens")) + read + written,
        output_tokens=count(value.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=count(obj(value.get("output_tokens_details")).get("thinking_tokens")),
        reported_cost=usd(value.get("cost")),
    )


def _content(blocks: list[Any], arguments: dict[int, str]) -> tuple[str, str, tuple[ToolCall, ...]]:
    """(text, thinking, tool calls) of blocks; ``arguments`` replaces tool inputs by index."""
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(blocks):
        block = obj(block)
        kind = block.get("type")
        if kind == "text":
            texts.append(text(block.get("text")))
        elif kind == "thinking":
            thinking.append(text(block.get("thinking")))
        elif kind == "tool_use":
            calls.append(_tool_use(block, arguments.get(i)))
    return "".join(texts), "\n".join(t for t in thinking if t), tuple(calls)


def read_response(call: ModelCall, body: Any) -> ModelCall:
    """Add what a JSON ``message`` body says."""
    message = obj(body)
    if message.get("type") == "error":
        return attrs.evolve(call, error=stream_error(message, "error in response body"))
    output, thinking, calls = _content(arr(message.get("content")), {})
    return attrs.evolve(
        call,
        model_responded=text(message.get("model")),
        response_id=text(message.get("id")),
        output_text=output,
        thinking=thinking,
        tool_calls=calls,
        finish_reason=text(message.get("stop_reason")),
        usage=_usage(message.get("usage")),
        error="" if message else "response body is not a JSON object",
    )


def read_stream(call: ModelCall, stream: SseStream, *, batch: bool = True) -> ModelCall:
    """Add what a stream of message events says, deltas joined per content block.

    ``batch=False`` parses the events one by one; the call is the same either way.
    """
    message: dict[str, Any] = {}
    usage: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    stop = problem = ""
    stopped = False
    payloads = stream.payloads
    if "ping" in stream.names:  # never read, so never parsed
        pairs = zip(stream.names, payloads, strict=True)
        payloads = tuple("{}" if e == "ping" else p for e, p in pairs)
    values, problems = decode_payloads(payloads, "stream event", batch=batch)
    for n, (name, data) in enumerate(zip(stream.names, values, strict=True)):
        if name == "ping":
            continue
        bad = problems[n] if problems is not None else ""
        if bad or not isinstance(data, dict):
            problem = problem or bad or f"stream event {n} is not a JSON object"
            continue
        kind = text(data.get("type")) or name
        index = data.get("index")
        if kind == "message_start":
            message = obj(data.get("message"))
            usage = dict(obj(message.get("usage")))
        elif kind == "content_block_start" and isinstance(index, int):
            blocks[index] = dict(obj(data.get("content_block")))
        elif kind == "content_block_delta" and isinstance(index, int):
            block = blocks.setdefault(index, {})
            delta = obj(data.get("delta"))
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = text(block.get("text")) + text(delta.get("text"))
            elif dtype == "thinking_delta":
                block["thinking"] = text(block.get("thinking")) + text(delta.get("thinking"))
            elif dtype == "input_json_delta":
                partial.setdefault(index, []).append(text(delta.get("partial_json")))
        elif kind == "message_delta":
            stop = text(obj(data.get("delta")).get("stop_reason")) or stop
            # Counts here are cumulative: they replace, and absent ones keep message_start's.
            updates = {k: v for k, v in obj(data.get("usage")).items() if v is not None}
            usage = {**(usage or {}), **updates}
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            problem = problem or stream_error(data)
    ordered = sorted(blocks)
    arguments = {
        ordered.index(i): joined
        for i, parts in partial.items()
        if i in blocks and (joined := "".join(parts))
    }
    output, thinking, calls = _content([blocks[i] for i in ordered], arguments)
    if not stopped and not problem:
        problem = "stream cut short: it ended before message_stop"
    return attrs.evolve(
        call,
        model_responded=text(message.get("model")),
        response_id=text(message.get("id")),
        output_text=output,
        thinking=thinking,
        tool_calls=calls,
        finish_reason=stop,
        usage=_usage(usage),
        error=problem,
    )
