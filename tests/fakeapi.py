"""A real HTTP server on 127.0.0.1 that imitates three model APIs.

Speaks OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI
Responses (``POST /v1/responses``) and Anthropic Messages
(``POST /v1/messages``), as JSON or as server-sent events when the request
asks for ``"stream": true``.  By default every call answers
``echo: <last user text>``; ``script()`` queues replies that are served first,
in order, whatever the endpoint: text, tool calls, error statuses with
headers (429 with retry-after, 500), gzip bodies, a stall before the status
line, or a connection dropped after some stream events.

Usage::

    with FakeAPI() as api:
        api.script(Reply(status=429, headers=(("retry-after", "1"),)), Reply(text="hi"))
        client = OpenAI(base_url=api.openai_url, api_key="sk-test")

The server runs in a background thread; ``stop()`` closes it so later
connection attempts fail (proof that a replay opens no socket).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_700_000_000
"""Fixed timestamp in every reply, so replies are deterministic."""


@dataclass(frozen=True)
class ToolUse:
    """A tool call the fake model makes."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    text: str | None = None
    """Assistant text; None echoes the last user text."""
    tool_calls: tuple[ToolUse, ...] = ()
    """Tool calls made after the text."""
    status: int = 200
    """HTTP status; anything but 200 sends an API error body."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra response headers (e.g. retry-after)."""
    gzip: bool = False
    """Send the JSON body gzip-encoded."""
    stall: float = 0.0
    """Seconds to wait before sending the status line."""
    event_delay: float = 0.002
    """Seconds between stream events (so they travel as separate chunks)."""
    disconnect_after: int | None = None
    """Drop the connection after this many stream events."""


@dataclass(frozen=True)
class Received:
    """A request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def last_user_text(path: str, body: dict[str, Any]) -> str:
    """The last user message of a request to any of the three APIs."""
    if path.endswith("/responses"):
        items = body.get("input")
        if isinstance(items, str):
            return items
        users = [i for i in items or [] if isinstance(i, dict) and i.get("role") == "user"]
        return _text_of(users[-1].get("content")) if users else ""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return _text_of(users[-1].get("content")) if users else ""


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


class _Answer:
    """Builds the JSON body or SSE events of one reply for one API."""

    def __init__(self, path: str, body: dict[str, Any], reply: Reply, raw: bytes) -> None:
        self.path = path
        self.body = body
        self.model = str(body.get("model", "fake-model"))
        self.text = reply.text if reply.text is not None else "echo: " + last_user_text(path, body)
        self.tools = reply.tool_calls
        self.id = hashlib.sha256(raw).hexdigest()[:16]
        self.words = self.text.split(" ")
        self.usage_in = len(raw) // 16
        self.usage_out = len(self.words) + 3 * len(self.tools)

    def _args(self, i: int) -> str:
        return json.dumps(self.tools[i].arguments)

    # -- OpenAI Chat Completions ------------------------------------------

    def _chat_tool_calls(self) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{self.id}_{i}",
                "type": "function",
                "function": {"name": t.name, "arguments": self._args(i)},
            }
            for i, t in enumerate(self.tools)
        ]

    def chat_json(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text, "refusal": None}
        if self.tools:
            message["tool_calls"] = self._chat_tool_calls()
        return {
            "id": f"chatcmpl-{self.id}",
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if self.tools else "stop",
                    "logprobs": None,
                }
            ],
            "usage": self._chat_usage(),
        }

    def _chat_usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.usage_in,
            "completion_tokens": self.usage_out,
            "total_tokens": self.usage_in + self.usage_out,
        }

    def chat_events(self) -> list[bytes]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse(
                {
                    "id": f"chatcmpl-{self.id}",
                    "object": "chat.completion.chunk",
                    "created": CREATED,
                    "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        events = [chunk({"role": "assistant", "content": ""})]
        for i, word in enumerate(self.words):
            events.append(chunk({"content": word if i == 0 else " " + word}))
        for i, call in enumerate(self._chat_tool_calls()):
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            events.append(chunk({"tool_calls": [{"index": i, **head}]}))
            args = call["function"]["arguments"]
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                events.append(
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, "tool_calls" if self.tools else "stop"))
        if (self.body.get("stream_options") or {}).get("include_usage"):
            events.append(
                _sse(
                    {
                        "id": f"chatcmpl-{self.id}",
                        "object": "chat.completion.chunk",
                        "created": CREATED,
                        "model": self.model,
                        "choices": [],
                        "usage": self._chat_usage(),
                    }
                )
            )
        events.append(_sse("[DONE]"))
        return events

    # -- OpenAI Responses -------------------------------------------------

    def _responses_items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": f"msg_{self.id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": self.text, "annotations": []}],
            }
        ]
        for i, t in enumerate(self.tools):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{self.id}_{i}",
                    "call_id": f"call_{self.id}_{i}",
                    "name": t.name,
                    "arguments": self._args(i),
                    "status": "completed",
                }
            )
        return items

    def responses_json(self, status: str = "completed") -> dict[str, Any]:
        return {
            "id": f"resp_{self.id}",
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "model": self.model,
            "output": self._responses_items() if status == "completed" else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": self.body.get("tools", []),
            "error": None,
            "incomplete_details": None,
            "instructions": self.body.get("instructions"),
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "usage": {
                "input_tokens": self.usage_in,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": self.usage_out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.usage_in + self.usage_out,
            },
        }

    def responses_events(self) -> list[bytes]:
        seq = iter(range(10_000))
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(_sse({"type": kind, "sequence_number": next(seq), **fields}, kind))

        emit("response.created", response=self.responses_json("in_progress"))
        message, *calls = self._responses_items()
        emit("response.output_item.added", output_index=0, item={**message, "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        common = {"item_id": message["id"], "output_index": 0, "content_index": 0}
        emit("response.content_part.added", part=part, **common)
        for i, word in enumerate(self.words):
            emit(
                "response.output_text.delta",
                delta=word if i == 0 else " " + word,
                logprobs=[],
                **common,
            )
        emit("response.output_text.done", text=self.text, logprobs=[], **common)
        emit("response.content_part.done", part=message["content"][0], **common)
        emit("response.output_item.done", output_index=0, item=message)
        for n, call in enumerate(calls, 1):
            emit("response.output_item.added", output_index=n, item={**call, "arguments": ""})
            emit(
                "response.function_call_arguments.delta",
                item_id=call["id"],
                output_index=n,
                delta=call["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=call["id"],
                output_index=n,
                arguments=call["arguments"],
                name=call["name"],
            )
            emit("response.output_item.done", output_index=n, item=call)
        emit("response.completed", response=self.responses_json())
        return events

    # -- Anthropic Messages -----------------------------------------------

    def _anthropic_blocks(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        for i, t in enumerate(self.tools):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{self.id}_{i}",
                    "name": t.name,
                    "input": t.arguments,
                }
            )
        return blocks

    def anthropic_json(self, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {
            "id": f"msg_{self.id}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._anthropic_blocks() if content is None else content,
            "stop_reason": ("tool_use" if self.tools else "end_turn") if content is None else None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.usage_in, "output_tokens": self.usage_out},
        }

    def anthropic_events(self) -> list[bytes]:
        events = [
            _sse({"type": "message_start", "message": self.anthropic_json([])}, "message_start")
        ]
        for index, block in enumerate(self._anthropic_blocks()):
            if block["type"] == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [
                    {"type": "text_delta", "text": w if i == 0 else " " + w}
                    for i, w in enumerate(self.words)
                ]
            else:
                start = {**block, "input": {}}
                args = json.dumps(block["input"])
                deltas = [
                    {"type": "input_json_delta", "partial_json": args[: len(args) // 2]},
                    {"type": "input_json_delta", "partial_json": args[len(args) // 2 :]},
                ]
            events.append(
                _sse(
                    {"type": "content_block_start", "index": index, "content_block": start},
                    "content_block_start",
                )
            )
            for delta in deltas:
                events.append(
                    _sse(
                        {"type": "content_block_delta", "index": index, "delta": delta},
                        "content_block_delta",
                    )
                )
            events.append(
                _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
            )
        events.append(
            _sse(
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": "tool_use" if self.tools else "end_turn",
                        "stop_sequence": None,
                    },
                    "usage": {"output_tokens": self.usage_out},
                },
                "message_delta",
            )
        )
        events.append(_sse({"type": "message_stop"}, "message_stop"))
        return events

    # -- dispatch -----------------------------------------------------------

    def json(self) -> dict[str, Any]:
        if self.path.endswith("/chat/completions"):
            return self.chat_json()
        if self.path.endswith("/responses"):
            return self.responses_json()
        return self.anthropic_json()

    def events(self) -> list[bytes]:
        if self.path.endswith("/chat/completions"):
            return self.chat_events()
        if self.path.endswith("/responses"):
            return self.responses_events()
        return self.anthropic_events()


def _error_body(path: str, status: int) -> dict[str, Any]:
    message = f"fake error {status}"
    if path.endswith("/messages"):
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": "fake_error", "param": None, "code": None}}


class FakeAPI:
    """The server.  Start with ``with FakeAPI() as api:`` or ``start()``/``stop()``."""

    PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")

    def __init__(self) -> None:
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._open: set[socket.socket] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic's base URL)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (OpenAI's base URL)."""
        return self.base_url + "/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one (echo when none is left)."""
        with self._lock:
            self._script.extend(replies)

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            return self._script.popleft() if self._script else Reply()

    def start(self) -> FakeAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with api._lock:
                    api._open.add(self.connection)

            def finish(self) -> None:
                with api._lock:
                    api._open.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                received = Received(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=raw,
                )
                if self.path.split("?")[0] not in FakeAPI.PATHS:
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, ())
                    return
                reply = api._next(received)
                if reply.stall:
                    time.sleep(reply.stall)
                if reply.status != 200:
                    self._send(reply.status, _error_body(self.path, reply.status), reply.headers)
                    return
                body = json.loads(raw)
                answer = _Answer(self.path, body, reply, raw)
                if body.get("stream"):
                    self._stream(answer.events(), reply)
                else:
                    self._send(200, answer.json(), reply.headers, gzipped=reply.gzip)

            def _send(
                self,
                status: int,
                payload: Any,
                headers: tuple[tuple[str, str], ...],
                gzipped: bool = False,
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if gzipped:
                    data = gzip.compress(data, mtime=0)
                    self.send_header("content-encoding", "gzip")
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, events: list[bytes], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.flush()
                for n, event in enumerate(events):
                    if reply.disconnect_after is not None and n >= reply.disconnect_after:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                    if reply.event_delay:
                        time.sleep(reply.event_delay)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many concurrent clients connect at once

        server = Server(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._open.clear()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["FakeAPI", "Received", "Reply", "ToolUse"]
