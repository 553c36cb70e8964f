"""A small OpenAI-compatible chat server on 127.0.0.1 whose behaviour the prompt picks.

Markers in the last user message choose the answer, so concurrent attempts
get the same behaviour whatever order they arrive in:

- ``[500]``: HTTP 500 every time;
- ``[429]``: HTTP 429 with ``retry-after: 0.05`` the first time this prompt is seen, then a reply;
- ``[hang]``: waits ``hang`` seconds, or until ``release()``, before answering;
- ``[hold]``: the first ``hold_after`` of these answer at once, later ones wait
  like ``[hang]`` (so a test knows how many attempts finish before it acts);
- ``[malformed]``: HTTP 200 whose body is not JSON;
- ``[401]``: HTTP 401;
- ``[slow]``: waits ``slow`` seconds before answering;
- anything else: ``echo: <prompt>`` with usage, after ``latency`` seconds.

``outage`` breaks every answer whatever the prompt, the way a provider's
outage would: ``"500"`` answers HTTP 500, ``"cut"`` sends the head and half
the body, then closes the connection.

With ``meet=n`` every request waits (at most ``hang`` seconds) until ``n``
requests are in flight at once: proof of concurrency that does not depend on
how fast the machine is.  ``peak`` is the most requests ever in flight and
``holding`` the number waiting now; ``wait_holding(n)`` blocks until ``n`` wait.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    """Start with ``with ChatServer() as server:``; ``server.url`` ends in ``/v1``."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        hang: float = 5.0,
        slow: float = 0.3,
        hold_after: int = 0,
        meet: int = 0,
    ) -> None:
        self.latency = latency
        self.slow = slow
        self.hang = hang
        self.hold_after = hold_after
        self.meet = meet
        self.outage = ""
        """``"500"`` or ``"cut"``: every answer broken that way; "" answers as usual."""
        self.tokens = (10, 5)
        """(prompt, completion) tokens every answer reports; change it to change the cost."""
        self.requests: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.in_flight = 0
        self.peak = 0
        self.holding = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._released = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._open: set[socket.socket] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _answer(self, raw: bytes) -> tuple[int, bytes, dict[str, str], float | None]:
        """Status, body, headers and the seconds to wait first (None: hold like ``[hang]``)."""
        try:
            body = json.loads(raw)
        except ValueError:
            return 400, b'{"error": {"message": "bad json"}}', {}, 0.0
        with self._lock:
            self.requests.append(body)
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        prompt = str(users[-1]["content"]) if users else ""
        if "[500]" in prompt or self.outage == "500":
            return 500, b'{"error": {"message": "server exploded", "type": "server_error"}}', {}, 0
        if "[401]" in prompt:
            return 401, b'{"error": {"message": "bad key", "type": "invalid_request_error"}}', {}, 0
        if "[429]" in prompt:
            with self._lock:
                first = prompt not in self.seen
                self.seen.add(prompt)
            if first:
                error = b'{"error": {"message": "slow down", "type": "rate_limit"}}'
                return 429, error, {"retry-after": "0.05"}, 0
        if "[malformed]" in prompt:
            return 200, b'{"choices": [ {"message": ', {}, 0
        held = "[hang]" in prompt
        if "[hold]" in prompt:
            with self._lock:
                self.hold_after -= 1
                held = self.hold_after < 0
        delay: float | None = None if held else self.latency
        if "[slow]" in prompt:
            delay = self.slow
        text = "echo: " + prompt
        reply = {
            "id": "chatcmpl-" + hashlib.sha256(raw).hexdigest()[:12],
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": self.tokens[0],
                "completion_tokens": self.tokens[1],
                "total_tokens": sum(self.tokens),
            },
        }
        return 200, json.dumps(reply).encode(), {}, delay

    def release(self) -> None:
        """Answer every ``[hang]`` request now, and every later one at once."""
        self._released.set()

    def wait_holding(self, count: int, timeout: float = 30.0) -> bool:
        """Block until ``count`` requests are held (``[hang]``); False after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.holding >= count, timeout)

    def _hold(self, seconds: float) -> None:
        with self._changed:
            self.holding += 1
            self._changed.notify_all()
        self._released.wait(seconds)
        with self._changed:
            self.holding -= 1
            self._changed.notify_all()

    def _enter(self) -> None:
        with self._changed:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._changed.notify_all()
            if self.meet:
                self._changed.wait_for(lambda: self.peak >= self.meet, self.hang)

    def _leave(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()

    def start(self) -> ChatServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave as separate writes

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
                owner._enter()
                try:
                    self._reply(raw)
                finally:
                    owner._leave()

            def _reply(self, raw: bytes) -> None:
                status, data, headers, delay = owner._answer(raw)
                if delay is None:
                    owner._hold(owner.hang)
                elif delay:
                    time.sleep(delay)
                cut = owner.outage == "cut"
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2] if cut else data)
                    if cut:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":  # pragma: no cover - manual use
    import sys

    with ChatServer(latency=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0) as s:
        print(s.url, flush=True)
        threading.Event().wait()
