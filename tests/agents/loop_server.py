"""A chat server on 127.0.0.1 for agents that loop: it counts the responses it finished
sending and, after ``hold_after`` of them, holds every later request until released.

Each request is answered ``step N`` (N: the assistant messages already in the
conversation) until the conversation has ``calls`` answers, then ``done``; a
prompt holding ``[quick]`` is answered ``done`` at once, and the others wait
until ``quick`` such answers were sent (so the quick attempts always finish
first, however the machine schedules them).  ``finished`` lists,
in order, the (first user message, turn) of every response whose last byte was
written and flushed; ``reached`` is set when there are ``hold_after`` of them,
and ``wait_holding(n)`` waits until ``n`` requests are held.  A test that kills
its client therefore knows exactly which exchanges were answered, and that no
other one will be.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopServer:
    """Start with ``with LoopServer(calls=40, hold_after=50) as server:``."""

    def __init__(self, *, calls: int, hold_after: int, quick: int = 0) -> None:
        self.calls = calls
        self.hold_after = hold_after
        self.quick = quick
        self.finished: list[tuple[str, int]] = []
        self.reached = threading.Event()
        self.holding = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _quick_first(self, prompt: str) -> None:
        if "[quick]" in prompt:
            return
        with self._changed:
            self._changed.wait_for(
                lambda: sum("[quick]" in p for p, _ in self.finished) >= self.quick, 120
            )

    def _hold(self) -> None:
        with self._changed:
            if len(self.finished) < self.hold_after:
                return
            self.holding += 1
            self._changed.notify_all()
        self._released.wait(120)

    def wait_holding(self, n: int, timeout: float = 120.0) -> bool:
        """True once ``n`` requests are held (False after ``timeout`` seconds)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.holding >= n, timeout)

    def answer(self, body: dict[str, Any]) -> tuple[tuple[str, int], bytes]:
        messages = body.get("messages", [])
        prompt = next((str(m["content"]) for m in messages if m.get("role") == "user"), "")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        done = "[quick]" in prompt or turn + 1 >= self.calls
        content = "done" if done else f"step {turn}"
        reply = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        }
        return (prompt, turn), json.dumps(reply).encode()

    def __enter__(self) -> LoopServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw)
                users = [m for m in body.get("messages", []) if m.get("role") == "user"]
                outer._quick_first(str(users[0]["content"]) if users else "")
                outer._hold()
                if outer._released.is_set():
                    self.close_connection = True
                    return
                key, data = outer.answer(body)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                with outer._changed:
                    outer.finished.append(key)
                    outer._changed.notify_all()
                    if len(outer.finished) >= outer.hold_after:
                        outer.reached.set()

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client killed mid-request: nothing to report

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._released.set()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
