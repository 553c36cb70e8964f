"""OpenAI Chat Completions (``POST .../chat/completions``), JSON and streamed.

Only the first choice (index 0) is read; ``n > 1`` requests keep the others
in the tape but not in the decoded call.  Servers that imitate the API and
expose reasoning as ``reasoning_content`` or ``reasoning`` (llama.cpp, vLLM,
DeepSeek, OpenRouter) have it read as thinking.
"""

from __future__ import annotations

from itertools import repeat
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
from ._spec import OPENAI_DROPPED, ApiSpec, Item, call_item, fold_messages, text_of
from .reuse._session import Memo

API: Final = "openai.chat"
"""OpenAI Chat Completions (``POST .../chat/completions``)."""
CONVERSATION: Final = "messages"
"""The request's array of conversation items."""


def _tool_call(call: dict[str, Any]) -> ToolCall:
    if call.get("type") == "custom":
        custom = obj(call.get("custom"))
        return tool_call(
            text(call.get("id")), text(custom.get("name")), raw_json(custom.get("input"))
        )
    function = obj(call.get("function"))
    return tool_call(
        text(call.get("id")), text(function.get("name")), raw_json(function.get("arguments"))
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
    tools = memo.whole(arr(body.get("tools")), _tool_names)
    functions = [text(f.get("name")) for f in arr(body.get("functions")) if isinstance(f, dict)]
    return ModelCall(
        api=API,
        model_requested=text(body.get("model")),
        input_messages=memo.each(arr(body.get("messages")), _message),
        tools_offered=tools + tuple(f for f in functions if f),
    )


def _tool_names(tools: list[Any]) -> tuple[str, ...]:
    names = [_tool_name(t) for t in tools if isinstance(t, dict)]
    return tuple(n for n in names if n)


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return NO_USAGE
    prompt = obj(value.get("prompt_tokens_details"))
    completion = obj(value.get("completion_tokens_details"))
    return reported_usage(
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


def read_response(call: Calling, body: Any) -> ModelCall:
    """Add what a JSON ``chat.completion`` body says."""
    body = obj(body)
    if "error" in body:
        return with_error(call, stream_error(body, "error in response body"))
    choice = _first_choice(body)
    message = obj(choice.get("message"))
    return answered(
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


def read_stream(call: Calling, stream: SseStream, *, batch: bool = True) -> ModelCall:
    """Add what a ``chat.completion.chunk`` stream says, fragments reassembled by index.

    ``batch=False`` parses the events one by one (``decode_payloads``); the
    call is the same either way.
    """
    stop = _done_at(stream.payloads)
    done = stop is not None
    payloads = stream.payloads[:stop] if done else stream.payloads
    if batch:
        quick = _read_typed(call, payloads, done, stream.complete)
        if quick is not None:
            return quick
    out: list[str] = []
    thinking: list[str] = []
    slots: dict[int, _Slot] = {}
    finish = rid = model = problem = ""
    usage = NO_USAGE
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
    return answered(
        call,
        model_responded=model,
        response_id=rid,
        output_text="".join(out),
        thinking="".join(thinking),
        tool_calls=_tool_calls(slots),
        finish_reason=finish,
        usage=usage,
        error=problem,
    )


def _tool_calls(slots: dict[int, _Slot]) -> tuple[ToolCall, ...]:
    """The calls reassembled, in the order of their indexes."""
    return tuple([tool_call(s.id, s.name, "".join(s.arguments)) for _, s in sorted(slots.items())])


def _read_typed(
    call: Calling, payloads: tuple[str, ...], done: bool, complete: bool
) -> ModelCall | None:
    """``read_stream``'s call from typed chunks (``_fast_streams``), or None to read it
    the general way: a stream with an error chunk or a legacy ``function_call`` (the
    substrings are a superset of those keys), or any chunk the typed records refuse."""
    if not payloads:
        return None
    chunks = fast.batch(payloads, fast.CHAT, fast.ChatChunk, ('"error"', '"function_call"'))
    return None if chunks is None else _from_chunks(call, chunks, done, complete)


def read_stream_bytes(call: Calling, body: bytes) -> ModelCall | None:
    """``read_stream(call, parse_sse(body))`` for the usual body (``fast.data_events``:
    one-line ``data:`` events closed by ``[DONE]``), cut and parsed straight from its
    bytes; None for any other body, which ``read_stream`` then reads."""
    chunks = fast.data_events(body, fast.CHAT_LINES)
    return None if chunks is None else _from_chunks(call, chunks, True, True)


def _add_fragments(slots: dict[int, _Slot], fragments: list[fast.ChatToolFragment]) -> None:
    """Add one chunk's tool call fragments to the calls being reassembled."""
    for position, fragment in enumerate(fragments):
        key = fragment.index if fragment.index is not None else position
        slot = slots.get(key)
        if slot is None:
            slot = slots[key] = _Slot()
        if not slot.id and fragment.id is not None:
            slot.id = fragment.id
        function = fragment.function
        if function is None:
            slot.arguments.append("")
            continue
        if not slot.name and function.name is not None:
            slot.name = function.name
        slot.arguments.append(function.arguments or "")


def _from_chunks(
    call: Calling, chunks: list[fast.ChatChunk], done: bool, complete: bool
) -> ModelCall | None:
    """The call typed chunks make (the walk of ``read_stream``); None for a stream with
    an error chunk or a legacy ``function_call``, which the general walk reads."""
    out: list[str] = []
    thinking: list[str] = []
    slots: dict[int, _Slot] = {}
    finish = rid = model = ""
    usage = NO_USAGE
    for chunk in chunks:
        if chunk.error:
            return None
        if not rid and chunk.id is not None:
            rid = chunk.id
        if not model and chunk.model is not None:
            model = chunk.model
        if chunk.usage is not None:
            usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                if delta.function_call:
                    return None
                content = delta.content
                if content:
                    out.append(content)
                if delta.refusal:
                    out.append(delta.refusal)
                reasoning = delta.reasoning_content or delta.reasoning
                if reasoning:
                    thinking.append(reasoning)
                fragments = delta.tool_calls
                if fragments:
                    first = fragments[0]
                    function = first.function
                    slot = slots.get(first.index) if first.index is not None else None
                    # The usual fragment goes on the arguments of a call already begun
                    # (what _add_fragments does with it, without the call and the loop).
                    if (
                        slot is not None
                        and len(fragments) == 1
                        and first.id is None
                        and function is not None
                        and function.name is None
                    ):
                        slot.arguments.append(function.arguments or "")
                    else:
                        _add_fragments(slots, fragments)
            if choice.finish_reason:
                finish = choice.finish_reason
    problem = ""
    if not done and not (finish and complete):
        problem = "stream cut short: it ended before data: [DONE]"
    return answered(
        call,
        model_responded=model,
        response_id=rid,
        output_text="".join(out),
        thinking="".join(thinking),
        tool_calls=_tool_calls(slots),
        finish_reason=finish,
        usage=usage,
        error=problem,
    )


# -- recognising, matching and the conversation view ------------------------------------


def _fold(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "messages": fold_messages(body.get("messages"), "content", "text")}


def _item(path: str, m: Any) -> Item:
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
            args = fn.get("arguments", fn.get("input"))
            calls.append(call_item(c.get("id"), fn.get("name"), args))
    legacy = m.get("function_call")
    if isinstance(legacy, dict) and not calls:
        calls.append(call_item(legacy.get("name"), legacy.get("name"), legacy.get("arguments")))
    return Item(path=path, role=role, text=content, calls=tuple(calls), raw=m)


def _conversation(body: dict[str, Any]) -> list[Item]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return [] if messages is None else [Item(path="messages", role="invalid", raw=messages)]
    return [_item(f"messages[{i}]", m) for i, m in enumerate(messages)]


def _claims_body(body: dict[str, Any], headers: Headers) -> bool:
    """A list of messages and a model name (the registry asks Anthropic's first: its
    bodies can have both)."""
    return isinstance(body.get("messages"), list) and isinstance(body.get("model"), str)


SPEC: Final = ApiSpec(
    name=API,
    path_suffix="/chat/completions",
    provider="openai",
    conversation_keys=("messages",),
    dropped=OPENAI_DROPPED,
    fold=_fold,
    conversation=_conversation,
    claims_body=_claims_body,
)
"""OpenAI Chat Completions as the registry lists it."""
