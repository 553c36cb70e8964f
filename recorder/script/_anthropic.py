"""Scripted replies as Anthropic Messages bodies and streams."""

from __future__ import annotations

import json

from ._provider import ErrorReply, Reply
from ._render import (
    Ctx,
    finish_of,
    json_bytes,
    pieces,
    sse_events,
    usage_of,
)


def _anthropic_blocks(reply: Reply, ctx: Ctx) -> list[dict[str, object]]:
    blocks: list[dict[str, object]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for k, call in enumerate(reply.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": ctx.call_id(k, call, "toolu_"),
                "name": call.name,
                "input": json.loads(call.arguments),
            }
        )
    return blocks


_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def anthropic_message(reply: Reply, ctx: Ctx, *, done: bool) -> dict[str, object]:
    usage = usage_of(reply)
    return {
        "id": f"msg_script{ctx.index:04d}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": _anthropic_blocks(reply, ctx) if done else [],
        "stop_reason": _STOP[finish_of(reply)] if done else None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage.output_tokens if done else 1,
            "service_tier": "standard",
        },
    }


def anthropic_stream(reply: Reply, ctx: Ctx) -> list[bytes]:
    events: list[tuple[str, object]] = []

    def emit(kind: str, **fields: object) -> None:
        events.append((kind, {"type": kind, **fields}))

    emit("message_start", message=anthropic_message(reply, ctx, done=False))
    for index, block in enumerate(_anthropic_blocks(reply, ctx)):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            if index == 0:
                emit("ping")
            for p in pieces(reply.text):
                emit("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            if index == 0:
                emit("ping")
            args = json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))
            for p in pieces(args, 16):
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": p},
                )
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": _STOP[finish_of(reply)], "stop_sequence": None},
        usage={"output_tokens": usage_of(reply).output_tokens},
    )
    emit("message_stop")
    return sse_events(events, named=True)


def anthropic_error(err: ErrorReply) -> bytes:
    kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }
    etype = err.type or kinds.get(
        err.status, "api_error" if err.status >= 500 else "invalid_request_error"
    )
    return json_bytes({"type": "error", "error": {"type": etype, "message": err.message}})
