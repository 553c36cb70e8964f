"""An OpenAI-compatible chat server on 127.0.0.1 that plays a competent model
under the reference agent's ``forced`` strategy (docs/reference-agent.md).

The server follows a plan of tool steps, e.g. ``[("edit", {"path": ...})]``.
It keeps no state between requests: the number of ``role: tool`` messages in
the request says how many steps are done, so the same conversation always
gets the same reply.

- ``tool_choice`` names the control function (``control``, by default
  ``next_action``): a call
  choosing the next planned tool, or ``"answer"`` when the plan is done.  The
  argument name and the allowed choices are read from that function's schema
  in the request's ``tools``;
- ``tool_choice`` names a tool: a call of that tool with the planned
  arguments, checked against the tool's schema in the request;
- ``tool_choice`` is ``"none"``: the plain-text ``answer``.

Anything it cannot play (an unknown tool, arguments that do not fit the
schema, ``tool_choice: "auto"``) is an HTTP 400 naming the problem, so a
change of the agent's protocol fails loudly.  ``stream: true`` gets the same
reply as server-sent events.  The server stops when its ``with`` block ends,
or by itself after ``lifetime`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = tuple[str, Mapping[str, Any]]
"""A planned tool call: the tool's name and its arguments."""


class _Unplayable(Exception):
    """The request asks for something the plan cannot answer; the message says what."""


def _tool(body: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        if function.get("name") == name:
            return function
    raise _Unplayable(f"tool_choice names {name!r}, which is not among the request's tools")


def _fits(function: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Raise unless ``args`` fit the function's declared parameters."""
    schema = function.get("parameters") or {}
    properties = schema.get("properties") or {}
    missing = [k for k in schema.get("required") or () if k not in args]
    unknown = [k for k in args if k not in properties]
    if missing or unknown:
        raise _Unplayable(
            f"arguments {sorted(args)} do not fit {function.get('name')!r}:"
            f" missing {missing}, unknown {unknown}"
        )


class ForcedChatServer:
    """``with ForcedChatServer(plan, answer) as server:``; ``server.url`` ends in ``/v1``."""

    def __init__(
        self,
        plan: Sequence[Step],
        answer: str,
        *,
        control: str = "next_action",
        lifetime: float = 60.0,
    ) -> None:
        self.plan = tuple(plan)
        self.answer = answer
        self.control = control
        self.lifetime = lifetime
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order."""
        self.port = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._open: set[socket.socket] = set()
        self._timer: threading.Timer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the model ------------------------------------------------------------------

    def _done(self, body: Mapping[str, Any]) -> int:
        return sum(1 for m in body.get("messages") or () if m.get("role") == "tool")

    def _control(self, body: Mapping[str, Any], function: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments of the control function: the next planned tool, or the answer."""
        properties = (function.get("parameters") or {}).get("properties") or {}
        choices = [(k, v["enum"]) for k, v in properties.items() if isinstance(v.get("enum"), list)]
        if len(choices) != 1:
            raise _Unplayable(f"{function.get('name')!r} declares no single enum argument")
        key, allowed = choices[0]
        done = self._done(body)
        choice = self.plan[done][0] if done < len(self.plan) else "answer"
        if choice not in allowed:
            raise _Unplayable(f"{choice!r} is not among {function.get('name')!r}'s {allowed}")
        return {key: choice}

    def _arguments(self, body: Mapping[str, Any], function: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments of a forced tool: the planned ones, or a read of the planned file."""
        name = function.get("name")
        done = self._done(body)
        if done < len(self.plan) and self.plan[done][0] == name:
            args = dict(self.plan[done][1])
        elif name == "read" and done < len(self.plan) and "path" in self.plan[done][1]:
            args = {"path": self.plan[done][1]["path"]}
        else:
            raise _Unplayable(f"the plan has no call of {name!r} at step {done + 1}")
        _fits(function, args)
        return args

    def _message(self, body: Mapping[str, Any]) -> dict[str, Any]:
        choice = body.get("tool_choice")
        if choice == "none":
            return {"role": "assistant", "content": self.answer}
        if not isinstance(choice, dict):
            raise _Unplayable(f"this server plays forced tool choices only, got {choice!r}")
        function = _tool(body, str((choice.get("function") or {}).get("name")))
        if function["name"] == self.control:
            args = self._control(body, function)
        else:
            args = self._arguments(body, function)
        call = {
            "id": f"call_{self._done(body)}_{function['name']}",
            "type": "function",
            "function": {"name": function["name"], "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def _reply(self, raw: bytes) -> tuple[int, str, bytes]:
        try:
            body = json.loads(raw)
            with self._lock:
                self.requests.append(body)
            message = self._message(body)
        except (ValueError, _Unplayable) as exc:
            error = {"error": {"message": str(exc), "type": "invalid_request_error"}}
            return 400, "application/json", json.dumps(error).encode()
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        ident = f"chatcmpl-{len(body.get('messages') or ())}"
        usage = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
        head = {"id": ident, "created": 1_700_000_000, "model": body.get("model", "fake")}
        if not body.get("stream"):
            reply = head | {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
            return 200, "application/json", json.dumps(reply).encode()
        delta = dict(message)
        for index, call in enumerate(delta.get("tool_calls") or ()):
            call["index"] = index
        chunks = [
            head | {"object": "chat.completion.chunk", "choices": [c]}
            for c in (
                {"index": 0, "delta": delta, "finish_reason": None},
                {"index": 0, "delta": {}, "finish_reason": finish},
            )
        ]
        chunks[-1]["usage"] = usage
        events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return 200, "text/event-stream", events.encode()

    # -- the server -----------------------------------------------------------------

    def start(self) -> ForcedChatServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                with owner._lock:
                    owner._open.add(self.connection)

            def finish(self) -> None:
                with owner._lock:
                    owner._open.discard(self.connection)
                with contextlib.suppress(OSError):
                    super().finish()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    status, kind = 404, "application/json"
                    data = b'{"error": {"message": "only /v1/chat/completions"}}'
                else:
                    status, kind, data = owner._reply(raw)
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop listening and close open connections; safe to call twice."""
        with self._lock:
            server, self._server = self._server, None
            timer, self._timer = self._timer, None
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def __enter__(self) -> ForcedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
