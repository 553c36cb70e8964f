"""Scripted replies as OpenAI Chat Completions and Responses bodies and streams."""

from __future__ import annotations

from ._provider import ErrorReply, Reply, ScriptedUsage
from ._render import (
    Ctx,
    finish_of,
    json_bytes,
    pieces,
    sse_events,
    usage_of,
)

# Chat Completions


def chat_body(reply: Reply, ctx: Ctx) -> bytes:
    message: dict[str, object] = {
        "role": "assistant",
        "content": reply.text or None,
        "refusal": None,
        "annotations": [],
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": ctx.call_id(k, c, "call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for k, c in enumerate(reply.tool_calls)
        ]
    usage = usage_of(reply)
    return json_bytes(
        {
            "id": f"chatcmpl-script{ctx.index:04d}",
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_of(reply),
                }
            ],
            "usage": _chat_usage(usage),
            "service_tier": "default",
            "system_fingerprint": None,
        }
    )


def _chat_usage(usage: ScriptedUsage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def chat_stream(reply: Reply, ctx: Ctx) -> list[bytes]:
    base = {
        "id": f"chatcmpl-script{ctx.index:04d}",
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "service_tier": "default",
        "system_fingerprint": None,
    }

    def chunk(delta: dict[str, object], finish: str | None = None) -> tuple[str, object]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return "", {**base, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": p}) for p in pieces(reply.text)]
    for k, call in enumerate(reply.tool_calls):
        head = {
            "index": k,
            "id": ctx.call_id(k, call, "call_"),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]})
            for p in pieces(call.arguments, 16)
        ]
    events.append(chunk({}, finish_of(reply)))
    if reply.usage is not None:
        events.append(("", {**base, "choices": [], "usage": _chat_usage(reply.usage)}))
    events.append(("", b"[DONE]"))
    return sse_events(events, named=False)


def openai_error(err: ErrorReply) -> bytes:
    kinds = {401: "invalid_request_error", 429: "requests", 500: "server_error"}
    codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
    etype = err.type or kinds.get(
        err.status, "invalid_request_error" if err.status < 500 else "server_error"
    )
    body = {"message": err.message, "type": etype, "param": None, "code": codes.get(err.status)}
    return json_bytes({"error": body})


# Responses


def _responses_items(reply: Reply, ctx: Ctx) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    if reply.text:
        items.append(
            {
                "id": f"msg_script{ctx.index:03d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    for k, call in enumerate(reply.tool_calls):
        items.append(
            {
                "id": f"fc_script{ctx.index:03d}x{k}",
                "type": "function_call",
                "status": "completed",
                "arguments": call.arguments,
                "call_id": ctx.call_id(k, call, "call_"),
                "name": call.name,
            }
        )
    return items


def response_object(reply: Reply, ctx: Ctx, *, done: bool) -> dict[str, object]:
    usage = usage_of(reply)
    incomplete = done and finish_of(reply) == "length"
    status = ("incomplete" if incomplete else "completed") if done else "in_progress"
    return {
        "id": f"resp_script{ctx.index:04d}",
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": ctx.model,
        "output": _responses_items(reply, ctx) if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": (
            {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }
            if done
            else None
        ),
        "user": None,
        "metadata": {},
    }


def responses_stream(reply: Reply, ctx: Ctx) -> list[bytes]:
    events: list[tuple[str, dict[str, object]]] = []

    def emit(kind: str, **fields: object) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    emit("response.created", response=response_object(reply, ctx, done=False))
    emit("response.in_progress", response=response_object(reply, ctx, done=False))
    for out, item in enumerate(_responses_items(reply, ctx)):
        item_id = item["id"]
        if item["type"] == "message":
            text = reply.text
            emit(
                "response.output_item.added",
                output_index=out,
                item={**item, "status": "in_progress", "content": []},
            )
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            where = {"item_id": item_id, "output_index": out, "content_index": 0}
            emit("response.content_part.added", **where, part=empty)
            for p in pieces(text):
                emit("response.output_text.delta", **where, delta=p, logprobs=[])
            emit("response.output_text.done", **where, text=text, logprobs=[])
            emit("response.content_part.done", **where, part={**empty, "text": text})
        else:
            emit(
                "response.output_item.added",
                output_index=out,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            args = str(item["arguments"])
            for p in pieces(args, 16):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item_id,
                    output_index=out,
                    delta=p,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=out,
                arguments=args,
            )
        emit("response.output_item.done", output_index=out, item=item)
    final = response_object(reply, ctx, done=True)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    emit(kind, response=final)
    return sse_events(list(events), named=True)
