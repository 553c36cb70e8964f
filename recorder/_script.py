"""Scripted provider: a short hand-written list of responses becomes a tape.

A script names the replies a model should give (text, tool calls, HTTP
errors, usage); ``script_exchanges`` renders each one as the exchange a real
API of the chosen flavour would have produced (the same JSON bodies, or the
same server-sent events when streamed), so a harness replayed against the
tape parses them with its real SDK.

A script has no recorded requests.  Each scripted exchange therefore carries
a stand-in request (just the model and the stream flag) with the header
``x-evaltape-script: any``: the replay side serves it to the next request
with the same method and URL path, in tape order, without comparing bodies
or headers.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from recorder._errors import TapeError
from recorder._events import (
    Chunk,
    Exchange,
    Headers,
    Mode,
    Request,
    Response,
    SessionStarted,
    Source,
)
from recorder._writer import open_session

SCRIPT_MATCH_HEADER = "x-evaltape-script"
"""Request header that marks a scripted exchange."""
SCRIPT_MATCH_ANY = "any"
"""Its value: serve to the next request with the same method and URL path."""

FIRST_BYTE = 0.05
"""Default seconds from request to the first response byte."""
CHUNK_GAP = 0.01
"""Seconds between two streamed events."""


class ScriptError(TapeError):
    """A script is malformed; the message names the file and the field."""


class ScriptFlavor(enum.Enum):
    """Which model API a script's exchanges imitate."""

    OPENAI_CHAT = "openai.chat"
    """OpenAI Chat Completions, ``POST /v1/chat/completions``."""
    OPENAI_RESPONSES = "openai.responses"
    """OpenAI Responses, ``POST /v1/responses``."""
    ANTHROPIC_MESSAGES = "anthropic.messages"
    """Anthropic Messages, ``POST /v1/messages``."""

    @classmethod
    def resolve(cls, name: str) -> ScriptFlavor:
        """The flavour named ``name``; ScriptError listing the choices otherwise."""
        for flavor in cls:
            if flavor.value == name:
                return flavor
        choices = ", ".join(f.value for f in cls)
        raise ScriptError(f"unknown flavor {name!r} (choose one of {choices})")


DEFAULT_URLS: Mapping[ScriptFlavor, str] = {
    ScriptFlavor.OPENAI_CHAT: "https://api.openai.com/v1/chat/completions",
    ScriptFlavor.OPENAI_RESPONSES: "https://api.openai.com/v1/responses",
    ScriptFlavor.ANTHROPIC_MESSAGES: "https://api.anthropic.com/v1/messages",
}


# -- the script, as values -------------------------------------------------------


@attrs.frozen(kw_only=True)
class ToolCall:
    """A tool call the model makes."""

    name: str
    """Tool (function) name."""
    arguments: str
    """Arguments as a JSON text (an object)."""
    id: str = ""
    """Call id; generated when empty."""


@attrs.frozen(kw_only=True)
class Usage:
    """Token counts reported with a reply."""

    input_tokens: int
    """Prompt tokens."""
    output_tokens: int
    """Completion tokens."""


@attrs.frozen(kw_only=True)
class Reply:
    """A successful model response."""

    text: str = ""
    """Assistant text (may be empty when there are tool calls)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls, in order."""
    usage: Usage | None = None
    """Token counts; estimated when None."""
    finish: str = ""
    """"stop", "length" or "tool_calls"; derived when empty."""
    latency: float = FIRST_BYTE
    """Seconds to the first byte."""


@attrs.frozen(kw_only=True)
class ErrorReply:
    """An HTTP error response."""

    status: int
    """Status code, 400-599."""
    message: str = ""
    """Error message put in the flavour's error body."""
    type: str = ""
    """Error type in the body; derived from the status when empty."""
    body: bytes | None = None
    """Exact body to send instead of the flavour's error body."""
    headers: Headers = ()
    """Extra response headers, e.g. ("retry-after", "2")."""
    latency: float = FIRST_BYTE
    """Seconds to the response."""


Step = Reply | ErrorReply


@attrs.frozen(kw_only=True)
class Script:
    """A parsed script."""

    source: str
    """The file it came from (or a label)."""
    responses: tuple[Step, ...]
    """The responses, served in order."""
    flavor: ScriptFlavor | None = None
    """Flavour named in the script, if any."""
    stream: bool | None = None
    """Streaming named in the script, if any."""
    model: str = "scripted-model"
    """Model name reported in the responses and the session header."""
    case_id: str = ""
    """Case id named in the script, if any."""
    base_url: str = ""
    """Base URL (scheme and host) replacing the flavour's default."""


# -- parsing ----------------------------------------------------------------------


class _Where:
    """Builds ``file: responses[3].tool_calls[0]: message`` errors."""

    def __init__(self, source: str, path: str = "") -> None:
        self.source = source
        self.path = path

    def at(self, part: str | int) -> _Where:
        if isinstance(part, int):
            return _Where(self.source, f"{self.path}[{part}]")
        return _Where(self.source, f"{self.path}.{part}" if self.path else part)

    def error(self, message: str) -> ScriptError:
        where = f"{self.path}: " if self.path else ""
        return ScriptError(f"{self.source}: {where}{message}")


def _obj(value: object, where: _Where, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected an object, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise where.at(str(key)).error(f"unknown key (expected one of {', '.join(allowed)})")
    return value


def _str(obj: dict[str, Any], key: str, where: _Where, default: str = "") -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise where.at(key).error(f"expected a string, got {type(value).__name__}")
    return value


def _int(obj: dict[str, Any], key: str, where: _Where, lo: int, hi: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise where.at(key).error(f"expected an integer from {lo} to {hi}, got {value!r}")
    return value


def _seconds(obj: dict[str, Any], key: str, where: _Where) -> float:
    value = obj.get(key, FIRST_BYTE)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise where.at(key).error(f"expected seconds >= 0, got {value!r}")
    return float(value)


def _tool_call(value: object, where: _Where) -> ToolCall:
    obj = _obj(value, where, ("name", "arguments", "id"))
    name = _str(obj, "name", where)
    if not name:
        raise where.at("name").error("a tool call needs a name")
    args = obj.get("arguments", {})
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError as exc:
            raise where.at("arguments").error(f"not valid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise where.at("arguments").error("must be a JSON object")
        text = args
    elif isinstance(args, dict):
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    else:
        raise where.at("arguments").error(f"expected an object, got {type(args).__name__}")
    return ToolCall(name=name, arguments=text, id=_str(obj, "id", where))


def _usage(value: object, where: _Where) -> Usage:
    obj = _obj(value, where, ("input_tokens", "output_tokens"))
    return Usage(
        input_tokens=_int(obj, "input_tokens", where, 0, 10**9),
        output_tokens=_int(obj, "output_tokens", where, 0, 10**9),
    )


def _error(value: object, where: _Where) -> ErrorReply:
    obj = _obj(value, where, ("status", "message", "type", "body", "headers", "retry_after"))
    status = _int(obj, "status", where, 400, 599)
    body: bytes | None = None
    if "body" in obj:
        raw = obj["body"]
        body = (
            raw.encode()
            if isinstance(raw, str)
            else json.dumps(raw, separators=(",", ":")).encode()
        )
    headers: list[tuple[str, str]] = []
    extra = obj.get("headers", {})
    if not isinstance(extra, dict):
        raise where.at("headers").error("expected an object of header names to strings")
    for name, val in extra.items():
        if not isinstance(val, str | int | float) or isinstance(val, bool):
            raise where.at("headers").at(str(name)).error("expected a string")
        headers.append((str(name).lower(), str(val)))
    if "retry_after" in obj:
        headers.append(("retry-after", str(_int(obj, "retry_after", where, 0, 86400))))
    return ErrorReply(
        status=status,
        message=_str(obj, "message", where, f"scripted error {status}"),
        type=_str(obj, "type", where),
        body=body,
        headers=tuple(headers),
    )


_STEP_KEYS = ("text", "tool_calls", "usage", "finish", "latency", "error")


def _step(value: object, where: _Where) -> Step:
    obj = _obj(value, where, _STEP_KEYS)
    if "error" in obj:
        others = sorted(set(obj) - {"error", "latency"})
        if others:
            raise where.error(f"an error response cannot also have {', '.join(others)}")
        err = _error(obj["error"], where.at("error"))
        return attrs.evolve(err, latency=_seconds(obj, "latency", where))
    calls = obj.get("tool_calls", [])
    if not isinstance(calls, list):
        raise where.at("tool_calls").error("expected a list")
    tool_calls = tuple(_tool_call(c, where.at("tool_calls").at(i)) for i, c in enumerate(calls))
    text = _str(obj, "text", where)
    if not text and not tool_calls:
        raise where.error("a response needs text, tool_calls or error")
    finish = _str(obj, "finish", where)
    if finish not in ("", "stop", "length", "tool_calls"):
        raise where.at("finish").error("expected stop, length or tool_calls")
    return Reply(
        text=text,
        tool_calls=tool_calls,
        usage=_usage(obj["usage"], where.at("usage")) if "usage" in obj else None,
        finish=finish,
        latency=_seconds(obj, "latency", where),
    )


def parse_script(data: object, source: str) -> Script:
    """Validate a decoded script (JSON or YAML value) into a Script."""
    top = _Where(source)
    keys = ("flavor", "stream", "model", "case", "base_url", "responses")
    obj = _obj(data, top, keys)
    responses = obj.get("responses")
    if not isinstance(responses, list) or not responses:
        raise top.at("responses").error("expected a non-empty list of responses")
    flavor = None
    if "flavor" in obj:
        name = _str(obj, "flavor", top)
        try:
            flavor = ScriptFlavor.resolve(name)
        except ScriptError as exc:
            raise top.at("flavor").error(str(exc)) from exc
    stream = obj.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise top.at("stream").error("expected true or false")
    base_url = _str(obj, "base_url", top).rstrip("/")
    if base_url and not re.match(r"https?://[^/\s]+$", base_url):
        raise top.at("base_url").error("expected scheme and host, e.g. http://127.0.0.1:8080")
    return Script(
        source=source,
        responses=tuple(_step(r, top.at("responses").at(i)) for i, r in enumerate(responses)),
        flavor=flavor,
        stream=stream,
        model=_str(obj, "model", top, "scripted-model") or "scripted-model",
        case_id=_str(obj, "case", top),
        base_url=base_url,
    )


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file: JSON, or YAML (``.yaml``/``.yml``) with PyYAML."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ScriptError(f"{source}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{source}: byte {exc.start}: not UTF-8 text") from exc
    if source.endswith((".yaml", ".yml")):
        return parse_script(_load_yaml(text, source), source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{source}: line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    return parse_script(data, source)


def _load_yaml(text: str, source: str) -> object:
    try:
        import yaml
    except ImportError as exc:
        raise ScriptError(f"{source}: YAML scripts need PyYAML (pip install pyyaml)") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScriptError(f"{source}: {where}{problem}") from exc


# -- rendering ----------------------------------------------------------------------


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _pieces(text: str, size: int = 0) -> list[str]:
    """Split text as a model streams it: words with their trailing spaces, or
    fixed-size slices when ``size`` is set."""
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _usage_of(reply: Reply) -> Usage:
    if reply.usage is not None:
        return reply.usage
    out = len(_pieces(reply.text)) + sum(len(_pieces(c.arguments, 16)) for c in reply.tool_calls)
    return Usage(input_tokens=0, output_tokens=max(1, out))


def _finish(reply: Reply) -> str:
    return reply.finish or ("tool_calls" if reply.tool_calls else "stop")


@attrs.frozen(kw_only=True)
class _Ctx:
    index: int
    model: str
    created: int

    def call_id(self, k: int, call: ToolCall, prefix: str) -> str:
        return call.id or f"{prefix}script{self.index:03d}x{k}"


def _sse(events: list[tuple[str, object]], *, named: bool) -> list[bytes]:
    out = []
    for name, data in events:
        payload = data if isinstance(data, bytes) else _json(data)
        head = f"event: {name}\n".encode() if named and name else b""
        out.append(head + b"data: " + payload + b"\n\n")
    return out


# OpenAI Chat Completions


def _chat_body(reply: Reply, ctx: _Ctx) -> bytes:
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
    usage = _usage_of(reply)
    return _json(
        {
            "id": f"chatcmpl-script{ctx.index:04d}",
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(reply)}
            ],
            "usage": _chat_usage(usage),
            "service_tier": "default",
            "system_fingerprint": None,
        }
    )


def _chat_usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _chat_stream(reply: Reply, ctx: _Ctx) -> list[bytes]:
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
    events += [chunk({"content": p}) for p in _pieces(reply.text)]
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
            for p in _pieces(call.arguments, 16)
        ]
    events.append(chunk({}, _finish(reply)))
    if reply.usage is not None:
        events.append(("", {**base, "choices": [], "usage": _chat_usage(reply.usage)}))
    events.append(("", b"[DONE]"))
    return _sse(events, named=False)


def _openai_error(err: ErrorReply) -> bytes:
    kinds = {401: "invalid_request_error", 429: "requests", 500: "server_error"}
    codes = {401: "invalid_api_key", 429: "rate_limit_exceeded"}
    etype = err.type or kinds.get(
        err.status, "invalid_request_error" if err.status < 500 else "server_error"
    )
    body = {"message": err.message, "type": etype, "param": None, "code": codes.get(err.status)}
    return _json({"error": body})


# OpenAI Responses


def _responses_items(reply: Reply, ctx: _Ctx) -> list[dict[str, object]]:
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


def _response_object(reply: Reply, ctx: _Ctx, *, done: bool) -> dict[str, object]:
    usage = _usage_of(reply)
    incomplete = done and _finish(reply) == "length"
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


def _responses_stream(reply: Reply, ctx: _Ctx) -> list[bytes]:
    events: list[tuple[str, dict[str, object]]] = []

    def emit(kind: str, **fields: object) -> None:
        events.append((kind, {"type": kind, "sequence_number": len(events), **fields}))

    emit("response.created", response=_response_object(reply, ctx, done=False))
    emit("response.in_progress", response=_response_object(reply, ctx, done=False))
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
            for p in _pieces(text):
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
            for p in _pieces(args, 16):
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
    final = _response_object(reply, ctx, done=True)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    emit(kind, response=final)
    return _sse(list(events), named=True)


# Anthropic Messages


def _anthropic_blocks(reply: Reply, ctx: _Ctx) -> list[dict[str, object]]:
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


def _anthropic_message(reply: Reply, ctx: _Ctx, *, done: bool) -> dict[str, object]:
    usage = _usage_of(reply)
    return {
        "id": f"msg_script{ctx.index:04d}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": _anthropic_blocks(reply, ctx) if done else [],
        "stop_reason": _STOP[_finish(reply)] if done else None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage.output_tokens if done else 1,
            "service_tier": "standard",
        },
    }


def _anthropic_stream(reply: Reply, ctx: _Ctx) -> list[bytes]:
    events: list[tuple[str, object]] = []

    def emit(kind: str, **fields: object) -> None:
        events.append((kind, {"type": kind, **fields}))

    emit("message_start", message=_anthropic_message(reply, ctx, done=False))
    for index, block in enumerate(_anthropic_blocks(reply, ctx)):
        if block["type"] == "text":
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            if index == 0:
                emit("ping")
            for p in _pieces(reply.text):
                emit("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
        else:
            emit("content_block_start", index=index, content_block={**block, "input": {}})
            if index == 0:
                emit("ping")
            args = json.dumps(block["input"], ensure_ascii=False, separators=(",", ":"))
            for p in _pieces(args, 16):
                emit(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": p},
                )
        emit("content_block_stop", index=index)
    emit(
        "message_delta",
        delta={"stop_reason": _STOP[_finish(reply)], "stop_sequence": None},
        usage={"output_tokens": _usage_of(reply).output_tokens},
    )
    emit("message_stop")
    return _sse(events, named=True)


def _anthropic_error(err: ErrorReply) -> bytes:
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
    return _json({"type": "error", "error": {"type": etype, "message": err.message}})


_Render = Callable[[Reply, _Ctx], bytes]
_Stream = Callable[[Reply, _Ctx], list[bytes]]

_BODY: Mapping[ScriptFlavor, _Render] = {
    ScriptFlavor.OPENAI_CHAT: _chat_body,
    ScriptFlavor.OPENAI_RESPONSES: lambda r, c: _json(_response_object(r, c, done=True)),
    ScriptFlavor.ANTHROPIC_MESSAGES: lambda r, c: _json(_anthropic_message(r, c, done=True)),
}
_STREAM: Mapping[ScriptFlavor, _Stream] = {
    ScriptFlavor.OPENAI_CHAT: _chat_stream,
    ScriptFlavor.OPENAI_RESPONSES: _responses_stream,
    ScriptFlavor.ANTHROPIC_MESSAGES: _anthropic_stream,
}


def _request(url: str, model: str, stream: bool) -> Request:
    """A stand-in request: the model and stream flag, marked to match any request."""
    return Request(
        method="POST",
        url=url,
        headers=(("content-type", "application/json"), (SCRIPT_MATCH_HEADER, SCRIPT_MATCH_ANY)),
        body=_json({"model": model, "stream": stream}),
    )


def _url(script: Script, flavor: ScriptFlavor) -> str:
    url = DEFAULT_URLS[flavor]
    if script.base_url:
        url = script.base_url + url[url.index("/", len("https://")) :]
    return url


def _render(step: Step, flavor: ScriptFlavor, stream: bool, ctx: _Ctx) -> tuple[Response, float]:
    """The response for one step and its duration."""
    request_id = (
        "req_" if flavor is ScriptFlavor.ANTHROPIC_MESSAGES else ""
    ) + f"script{ctx.index:04d}"
    id_header = "request-id" if flavor is ScriptFlavor.ANTHROPIC_MESSAGES else "x-request-id"
    if isinstance(step, ErrorReply):
        body = step.body
        if body is None:
            body = (
                _anthropic_error(step)
                if flavor is ScriptFlavor.ANTHROPIC_MESSAGES
                else _openai_error(step)
            )
        headers = (
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            (id_header, request_id),
            *step.headers,
        )
        chunks = (Chunk(at=step.latency, data=body),)
        return Response(status=step.status, headers=headers, chunks=chunks), step.latency
    if not stream:
        body = _BODY[flavor](step, ctx)
        headers = (
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            (id_header, request_id),
        )
        chunks = (Chunk(at=step.latency, data=body),)
        return Response(status=200, headers=headers, chunks=chunks), step.latency
    events = _STREAM[flavor](step, ctx)
    timed = tuple(
        Chunk(at=round(step.latency + i * CHUNK_GAP, 6), data=d) for i, d in enumerate(events)
    )
    headers = (
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        (id_header, request_id),
    )
    response = Response(status=200, headers=headers, chunks=timed, streamed=True)
    return response, timed[-1].at


def script_exchanges(
    script: Script, *, flavor: ScriptFlavor, stream: bool, started_at: float = 0.0
) -> tuple[Exchange, ...]:
    """The script's responses as exchanges of ``flavor``, one after another.

    Exchange times run back to back: each starts when the previous ended.
    """
    url = _url(script, flavor)
    out: list[Exchange] = []
    at = 0.0
    for index, step in enumerate(script.responses):
        ctx = _Ctx(index=index, model=script.model, created=int(started_at + at))
        response, duration = _render(step, flavor, stream, ctx)
        out.append(
            Exchange(
                at=round(at, 6),
                duration=duration,
                request=_request(url, script.model, stream),
                response=response,
            )
        )
        at += duration
    return tuple(out)


def _iter_ends(exchanges: tuple[Exchange, ...]) -> Iterator[float]:
    for e in exchanges:
        yield e.at + e.duration


def write_script_tape(
    script: Script,
    out: str | os.PathLike[str],
    *,
    flavor: ScriptFlavor | None = None,
    stream: bool | None = None,
    case_id: str | None = None,
    started_at: float = 0.0,
    session_id: str = "",
) -> SessionStarted:
    """Append one session holding the script's exchanges to the tape ``out``.

    ``flavor``, ``stream`` and ``case_id`` override the script's own; the
    flavour defaults to openai.chat and streaming to off.  The session id
    defaults to a digest of the script and options, so the same script
    always yields the same tape.
    """
    chosen = flavor or script.flavor or ScriptFlavor.OPENAI_CHAT
    streamed = stream if stream is not None else bool(script.stream)
    exchanges = script_exchanges(script, flavor=chosen, stream=streamed, started_at=started_at)
    case = script.case_id if case_id is None else case_id
    if not session_id:
        digest = hashlib.sha256(repr((script, chosen, streamed, case)).encode()).hexdigest()
        session_id = digest[:16]
    header = SessionStarted(
        session_id=session_id,
        started_at=started_at,
        case_id=case,
        model=script.model,
        mode=Mode.SCRIPT,
        source=Source.SCRIPT,
        source_detail=script.source,
        metadata=(("flavor", chosen.value), ("stream", streamed)),
    )
    end = max(_iter_ends(exchanges), default=0.0)
    with open_session(out, header, clock=lambda: round(end, 6)) as tape:
        for exchange in exchanges:
            tape.append(exchange)
    return header
