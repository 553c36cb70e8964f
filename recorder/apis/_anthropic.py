"""Anthropic Messages (``POST .../v1/messages``), JSON and streamed.

Anthropic's ``input_tokens`` leaves out cached input; the decoded usage adds
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` back so that
every API reports input the same way.  Text blocks of one response are
joined without a separator (citations split prose into many blocks).  Only
client ``tool_use`` blocks are tool calls; server tools (web search) run at
the provider and are not.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any, Final

from .._events import Headers
from . import _fast_streams as fast
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
from ._encoding import header
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
    with_error,
)
from ._spec import ApiSpec, Item, call_item, fold_messages, fold_text, text_of
from .reuse._session import Memo

API: Final = "anthropic.messages"
"""Anthropic Messages (``POST .../messages``)."""
CONVERSATION: Final = "messages"
"""The request's array of conversation items."""


def _tool_use(block: dict[str, Any], arguments: str | None = None) -> ToolCall:
    return tool_call(
        text(block.get("id")),
        text(block.get("name")),
        raw_json(block.get("input", {})) if arguments is None else arguments,
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
    messages.extend(chain.from_iterable(memo.each(arr(body.get("messages")), _messages)))
    return ModelCall(
        api=API,
        model_requested=text(body.get("model")),
        input_messages=tuple(messages),
        tools_offered=memo.whole(arr(body.get("tools")), _tool_names),
    )


def _tool_names(tools: list[Any]) -> tuple[str, ...]:
    names = [text(t.get("name")) for t in tools if isinstance(t, dict)]
    return tuple(n for n in names if n)


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return NO_USAGE
    read = count(value.get("cache_read_input_tokens"))
    written = count(value.get("cache_creation_input_tokens"))
    return reported_usage(
        input_tokens=count(value.get("input_tokens")) + read + written,
        output_tokens=count(value.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=count(obj(value.get("output_tokens_details")).get("thinking_tokens")),
        reported_cost=usd(value.get("cost")),
    )


_Parts = dict[int, list[str]]
"""Deltas that came for each block index, in order."""


def _content(
    blocks: dict[int, dict[str, Any]], texts: _Parts, thoughts: _Parts, inputs: _Parts
) -> tuple[str, str, tuple[ToolCall, ...]]:
    """(text, thinking, tool calls) of blocks in index order, each with the deltas that
    came for it joined on: text and thinking after the block's own, a tool's input
    deltas (when they join to any text) in place of its ``input``."""
    output: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for index in sorted(blocks):
        block = blocks[index]
        kind = block.get("type")
        if kind == "text":
            parts = texts.get(index)
            value = text(block.get("text"))
            output.append(value + "".join(parts) if parts is not None else value)
        elif kind == "thinking":
            parts = thoughts.get(index)
            value = text(block.get("thinking"))
            if parts is not None:
                value += "".join(parts)
            if value:
                thinking.append(value)
        elif kind == "tool_use":
            parts = inputs.get(index)
            joined = "".join(parts) if parts is not None else ""
            calls.append(_tool_use(block, joined or None))
    return "".join(output), "\n".join(thinking), tuple(calls)


def read_response(call: Calling, body: Any) -> ModelCall:
    """Add what a JSON ``message`` body says."""
    message = obj(body)
    if message.get("type") == "error":
        return with_error(call, stream_error(message, "error in response body"))
    blocks = dict(enumerate(map(obj, arr(message.get("content")))))
    output, thinking, calls = _content(blocks, {}, {}, {})
    return answered(
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


_PING = '{"type": "ping"}'
"""What a ping's data is read as (never parsed: the walks skip pings by name)."""


def read_stream(call: Calling, stream: SseStream, *, batch: bool = True) -> ModelCall:
    """Add what a stream of message events says, deltas joined per content block.

    ``batch=False`` parses the events one by one; the call is the same either way.
    """
    payloads = stream.payloads
    if "ping" in stream.names:  # never read, so never parsed
        pairs = zip(stream.names, payloads, strict=True)
        payloads = tuple(_PING if e == "ping" else p for e, p in pairs)
    if batch:
        quick = _read_typed(call, stream.names, payloads)
        if quick is not None:
            return quick
    message: dict[str, Any] = {}
    usage: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    texts: _Parts = {}
    thoughts: _Parts = {}
    partial: _Parts = {}
    stop = problem = ""
    stopped = False
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
            texts.pop(index, None)  # (the deltas of the block that was at this index)
            thoughts.pop(index, None)
        elif kind == "content_block_delta" and isinstance(index, int):
            blocks.setdefault(index, {})
            delta = obj(data.get("delta"))
            dtype = delta.get("type")
            if dtype == "text_delta":
                texts.setdefault(index, []).append(text(delta.get("text")))
            elif dtype == "thinking_delta":
                thoughts.setdefault(index, []).append(text(delta.get("thinking")))
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
    if not stopped and not problem:
        problem = "stream cut short: it ended before message_stop"
    return _streamed(call, message, usage, (blocks, texts, thoughts, partial), stop, problem)


def _streamed(
    call: Calling,
    message: dict[str, Any],
    usage: dict[str, Any] | None,
    gathered: tuple[dict[int, dict[str, Any]], _Parts, _Parts, _Parts],
    stop: str,
    problem: str,
) -> ModelCall:
    """The call a stream's gathered message, blocks and their deltas make."""
    output, thinking, calls = _content(*gathered)
    return answered(
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


def _read_typed(
    call: Calling, names: tuple[str, ...], payloads: tuple[str, ...]
) -> ModelCall | None:
    """``read_stream``'s call from typed events (``_fast_streams``), or None to read it
    the general way: a stream with an error event (the substring is a superset),
    or any event the typed records refuse."""
    if not payloads or "error" in names:
        return None
    events = fast.batch(payloads, fast.MESSAGES, fast.MessagesEvent, ('"error"',))
    return None if events is None else _from_events(call, names, events)


def read_stream_bytes(call: Calling, body: bytes) -> ModelCall | None:
    """``read_stream(call, parse_sse(body))`` for the usual body (``fast.named_events``:
    ``event:``/``data:`` line pairs), cut and parsed straight from its bytes; None for
    any other body, or one with an error event, which ``read_stream`` then reads.  A
    ping event is skipped as ``read_stream`` skips it (which never parses it: one that
    does not parse here leaves the body to ``read_stream``)."""
    found = fast.named_events(body, fast.MESSAGES_LINES)
    if found is None:
        return None
    heads, events = found
    # Every event has a type of its own (the records require one), which the walk reads:
    # an event's name only matters if it is a ping, which the walk skips.
    names = fast.event_names(heads) if b"event: ping" in heads else ("",) * len(events)
    return _from_events(call, names, events)


_NO_DELTA = fast.MessagesDelta()
_NO_MESSAGE = fast.MessageHead()


def _from_events(
    call: Calling, names: tuple[str, ...], events: list[fast.MessagesEvent]
) -> ModelCall | None:
    """The call typed events make (the walk of ``read_stream``); None for a stream with
    an error event, which the general walk reads."""
    message: dict[str, Any] = {}
    usage: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: _Parts = {}
    # The text and thinking deltas of the block now at each index, joined at the end.
    texts: _Parts = {}
    thoughts: _Parts = {}
    stop = ""
    stopped = False
    for name, data in zip(names, events, strict=True):
        if name == "ping":
            continue
        kind = data.type  # (never empty: then the general walk reads the stream)
        index = data.index
        if kind == "content_block_delta" and index is not None:
            if index not in blocks:
                blocks[index] = {}
            delta = data.delta or _NO_DELTA
            dtype = delta.type
            if dtype == "text_delta":
                parts = texts.get(index)
                if parts is None:
                    parts = texts[index] = []
                parts.append(delta.text or "")
            elif dtype == "thinking_delta":
                parts = thoughts.get(index)
                if parts is None:
                    parts = thoughts[index] = []
                parts.append(delta.thinking or "")
            elif dtype == "input_json_delta":
                parts = partial.get(index)
                if parts is None:
                    parts = partial[index] = []
                parts.append(delta.partial_json or "")
        elif kind == "message_start":
            head = data.message or _NO_MESSAGE
            message = {"id": head.id, "model": head.model}  # (all ``_streamed`` reads)
            usage = dict(obj(head.usage))
        elif kind == "content_block_start" and index is not None:
            blocks[index] = dict(data.content_block or {})
            texts.pop(index, None)
            thoughts.pop(index, None)
        elif kind == "message_delta":
            stop = (data.delta.stop_reason if data.delta is not None else None) or stop
            updates = {k: v for k, v in (data.usage or {}).items() if v is not None}
            usage = {**(usage or {}), **updates}
        elif kind == "message_stop":
            stopped = True
        elif kind == "error":
            return None
    problem = "" if stopped else "stream cut short: it ended before message_stop"
    return _streamed(call, message, usage, (blocks, texts, thoughts, partial), stop, problem)


# -- recognising, matching and the conversation view ------------------------------------

PATHS: Final = ("/v1/messages", "/v1/complete")
"""Path prefixes only Anthropic serves (``/v1/complete``: its legacy Text Completions)."""
DROPPED: Final = {"metadata": "holds only user_id, an abuse-monitoring id"}
"""Top-level body fields matching ignores, with the reason."""


def _fold(body: dict[str, Any]) -> dict[str, Any]:
    out = {**body, "messages": fold_messages(body.get("messages"), "content", "text")}
    if "system" in out:
        out["system"] = fold_text(out["system"], "text")
    return out


def _message_items(i: int, m: Any) -> list[Item]:
    """Each ``tool_result`` block is an item of its own, as ``read_request`` reads it."""
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
            calls.append(call_item(block.get("id"), block.get("name"), block.get("input", {})))
        rest.append(block)
    if rest or not out:
        raw = m if not out else {**m, "content": rest}
        out.append(Item(path=path, role=role, text=text_of(rest), calls=tuple(calls), raw=raw))
    return out


def _conversation(body: dict[str, Any]) -> list[Item]:
    """``system`` leads as a system item."""
    items: list[Item] = []
    if "system" in body:
        value = body["system"]
        items.append(Item(path="system", role="system", text=text_of(value), raw=value))
    messages = body.get("messages")
    for i, m in enumerate(messages if isinstance(messages, list) else []):
        items.extend(_message_items(i, m))
    return items


def _claims_body(body: dict[str, Any], headers: Headers) -> bool:
    """A list of messages with Anthropic's version in a header or the body (Vertex)."""
    if not isinstance(body.get("messages"), list):
        return False
    return bool(header(headers, "anthropic-version")) or "anthropic_version" in body


def _claims_request(path: str, headers: Mapping[str, str]) -> bool:
    """An ``anthropic-version`` header (every Anthropic SDK sends one) or a path only
    Anthropic serves."""
    return "anthropic-version" in headers or path.startswith(PATHS)


SPEC: Final = ApiSpec(
    name=API,
    path_suffix="/messages",
    provider="anthropic",
    conversation_keys=("system", "messages"),
    dropped=DROPPED,
    fold=_fold,
    conversation=_conversation,
    claims_body=_claims_body,
    claims_request=_claims_request,
)
"""Anthropic Messages as the registry lists it."""
