"""OpenAI Chat Completions (``POST .../chat/completions``), JSON and streamed.

Only the first choice (index 0) is read; ``n > 1`` requests keep the others
in the tape but not in the decoded call.  Servers that imitate the API and
expose reasoning as ``reasoning_content`` or ``reasoning`` (llama.cpp, vLLM,
DeepSeek, OpenRouter) have it read as thinking.
"""

from __future__ import annotations

from itertools import repeat
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

API: Final = "openai.chat"
CONVERSATION: Final = "messages"
"""The request's array of conversation items."""


def _tool_call(call: dict[str, Any]) -> ToolCall:
    if call.get("type") == "custom":
        custom = obj(call.get("custom"))
        return ToolCall(
            id=text(call.get("id")),
            name=text(custom.get("name")),
            arguments=raw_json(custom.get("input")),
        )
    function = obj(call.get("function"))
    return ToolCall(
        id=text(call.get("id")),
        name=text(function.get("name")),
        arguments=raw_json(function.get("arguments")),
    )


def _calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    calls = [_tool_call(c) for c in arr(message.get("tool_calls")) if isinstance(c, dict)]
    legacy = message.get("function_call")
    # The deprecated single function call; servers such as llama.cpp send it
    # beside tool_calls as a copy of the first call, so it counts only alone.
    if isinstance(legacy, dict) and not calls:
        calls.append(_tool_call({"function": legacy}))
    return tuple(calls)


def _message(m: dict[str, Any]) -> Message:
    role = text(m.get("role"))
    return Message(
        role="tool" if role == "function" else role,
        text=parts_text(m.get("content"), ("text",)),
        tool_calls=_calls(m),
        tool_call_id=text(m.get("tool_call_id")),
        name=text(m.get("name")),
    )


def _tool_name(tool: dict[str, Any]) -> str:
    if tool.get("type") == "custom":
        return text(obj(tool.get("custom")).get("name"))
    return text(obj(tool.get("function")).get("name"))


def read_request(body: dict[str, Any], memo: Memo[Message] | None = None) -> ModelCall:
    """The request side of a call: model, conversation, tools offered.

    ``memo`` keeps the normalized messages of earlier requests of the session.
    """
    memo = memo if memo is not None else Memo()
    tools = [_tool_name(t) for t in arr(body.get("tools")) if isinstance(t, dict)]
    tools += [text(f.get("name")) for f in arr(body.get("functions")) if isinstance(f, dict)]
    return ModelCall(
        api=API,
        model_requested=text(body.get("model")),
        input_messages=tuple(
            memo.get(m, _message) for m in arr(body.get("messages")) if isinstance(m, dict)
        ),
        tools_offered=tuple(t for t in tools if t),
    )


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return Usage.unknown()
    prompt = obj(value.get("prompt_tokens_details"))
    completion = obj(value.get("completion_tokens_details"))
    return Usage(
        input_tokens=count(value.get("prompt_tokens")),
        output_tokens=count(value.get("completion_tokens")),
        cache_read_tokens=count(prompt.get("cached_tokens")),
        cache_write_tokens=count(prompt.get("cache_write_tokens")),
        reasoning_tokens=count(completion.get("reasoning_tokens")),
        reported_cost=usd(value.get("cost")),
    )


def _first_choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = [c for c in arr(body.get("choices")) if isinstance(c, dict)]
    return next((c for c in choices if c.get("index", 0) == 0), choices[0] if choices else {})


def read_response(call: ModelCall, body: Any) -> ModelCall:
    """Add what a JSON ``chat.completion`` body says."""
    body = obj(body)
    if "error" in body:
        return attrs.evolve(call, error=stream_error(body, "error in response body"))
    choice = _first_choice(body)
    message = obj(choice.get("message"))
    return attrs.evolve(
        call,
        model_responded=text(body.get("model")),
        response_id=text(body.get("id")),
        output_text=text(message.get("content")) + text(message.get("refusal")),
        thinking=text(message.get("reasoning_content")) or text(message.get("reasoning")),
        tool_calls=_calls(message),
        finish_reason=text(choice.get("finish_reason")),
        usage=_usage(body.get("usage")),
        error="" if choice else "response has no choices",
    )


class _Slot:
    """A tool call being reassembled from delta fragments."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


def _delta(
    delta: dict[str, Any], out: list[str], thinking: list[str], slots: dict[int, _Slot]
) -> None:
    """Collect one choice delta's text, reasoning and tool-call fragments."""
    for field in ("content", "refusal"):
        value = delta.get(field)
        if isinstance(value, str) and value:
            out.append(value)
    value = delta.get("reasoning_content")
    if not (isinstance(value, str) and value):
        value = delta.get("reasoning")
    if isinstance(value, str) and value:
        thinking.append(value)
    calls = delta.get("tool_calls")
    fragments = [f for f in calls if isinstance(f, dict)] if isinstance(calls, list) else []
    if not fragments and isinstance(delta.get("function_call"), dict):
        fragments.append({"index": -1, "function": delta["function_call"]})
    for position, fragment in enumerate(fragments):
        index = fragment.get("index")
        key = index if isinstance(index, int) else position
        slot = slots.get(key)
        if slot is None:
            slot = slots[key] = _Slot()
        if not slot.id:
            slot.id = text(fragment.get("id"))
        function = fragment.get("function")
        if not isinstance(function, dict):
            function = {}
        if not slot.name:
            slot.name = text(function.get("name"))
        arguments = function.get("arguments")
        slot.arguments.append(arguments if isinstance(arguments, str) else raw_json(arguments))


def _done_at(payloads: tuple[str, ...]) -> int | None:
    """Index of the first ``data: [DONE]`` event, None without one."""
    try:
        return list(map(str.startswith, payloads, repeat("[DONE]"))).index(True)
    except ValueError:
        return None


def read_stream(call: ModelCall, stream: SseStream, *, batch: bool = True) -> ModelCall:
    """Add what a ``chat.completion.chunk`` stream says, fragments reassembled by index.

    ``batch=False`` parses the events one by one (``decode_payloads``); the
    call is the same either way.
    """
    out: list[str] = []
    thinking: list[str] = []
    slots: dict[int, _Slot] = {}
    finish = rid = model = problem = ""
    usage = Usage.unknown()
    stop = _done_at(stream.payloads)
    done = stop is not None
    payloads = stream.payloads[:stop] if done else stream.payloads
    chunks, problems = decode_payloads(payloads, "stream event", batch=batch)
    for n, chunk in enumerate(chunks):
        if problems is not None and problems[n]:
            problem = problem or problems[n]
            continue
        if not isinstance(chunk, dict):
            problem = problem or f"stream event {n} is not a JSON object"
            continue
        if "error" in chunk:
            problem = problem or stream_error(chunk)
            continue
        if not rid:
            rid = text(chunk.get("id"))
        if not model:
            model = text(chunk.get("model"))
        value = chunk.get("usage")
        if isinstance(value, dict):
            usage = _usage(value)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            continue
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and delta:
                _delta(delta, out, thinking, slots)
            value = choice.get("finish_reason")
            if isinstance(value, str) and value:
                finish = value
    if not problem and not done and not (finish and stream.complete):
        problem = "stream cut short: it ended before data: [DONE]"
    return attrs.evolve(
        call,
        model_responded=model,
        response_id=rid,
        output_text="".join(out),
        thinking="".join(thinking),
        tool_calls=tuple(
            ToolCall(id=s.id, name=s.name, arguments="".join(s.arguments))
            for _, s in sorted(slots.items())
        ),
        finish_reason=finish,
        usage=usage,
        error=problem,
    )
