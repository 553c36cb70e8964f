"""Builders of recorded facts the tests share: exchanges, OpenAI chat turns and tapes.

Values only; nothing here opens a socket.  Tests where the wire matters use
the 127.0.0.1 servers of ``conftest.py`` instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import msgpack
import pytest
import zstandard

from evaltape.recorder import (
    Chunk,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeReader,
    TransportError,
    open_session,
    recording_client,
)
from evaltape.recorder.redact import Redactor
from evaltape.recorder.tape._codec import to_plain
from evaltape.recorder.tape._frames import FLAG_END, FLAG_START, file_header, frame
from evaltape.recorder.tape._pack import Packer

CHAT_URL = "http://127.0.0.1:9/v1/chat/completions"
"""A Chat Completions URL on a port nothing listens on."""


Headers = tuple[tuple[str, str], ...]

JSON_HEADERS: Headers = (("content-type", "application/json"),)
"""The headers of a JSON body."""


def exchange(
    url: str,
    request: Any,
    response: Any | None = None,
    *,
    method: str = "POST",
    request_headers: Headers = (),
    at: float = 0.0,
    duration: float = 0.1,
    status: int = 200,
    headers: Headers = (),
    chunks: Sequence[bytes] | None = None,
    chunk_at: float = 0.05,
    chunk_every: float = 0.01,
    streamed: bool | None = None,
    error: TransportError | None = None,
) -> Exchange:
    """A ``method`` of ``request`` (JSON, or raw bytes) to ``url``, and what came back.

    The response is ``response`` (JSON, or raw bytes) in one chunk at ``chunk_at``, or
    the raw ``chunks`` at ``chunk_at``, ``chunk_at + chunk_every``, ...; ``streamed``
    defaults to "more than one chunk".  With neither there is no response: ``error``
    says why, or the call never finished.
    """
    if response is not None and chunks is not None:
        raise ValueError("give response or chunks, not both")
    if response is not None:
        data = response if isinstance(response, bytes) else json.dumps(response).encode()
        chunks = (data,)
    body = request if isinstance(request, bytes) else json.dumps(request).encode()
    answer = None
    if chunks is not None:
        answer = Response(
            status=status,
            headers=headers,
            chunks=tuple(
                Chunk(at=chunk_at + n * chunk_every, data=data) for n, data in enumerate(chunks)
            ),
            streamed=len(chunks) > 1 if streamed is None else streamed,
        )
    return Exchange(
        at=at,
        duration=duration,
        request=Request(method=method, url=url, headers=request_headers, body=body),
        response=answer,
        error=error,
    )


def chat_exchange(
    at: float,
    messages: list[dict[str, object]],
    reply: dict[str, object],
    *,
    model: str = "gpt-x",
    duration: float = 0.2,
    chunk_at: float = 0.1,
    extra: dict[str, object] | None = None,
) -> Exchange:
    """One Chat Completions call: ``messages`` sent, ``reply`` the first choice's message.

    ``extra`` adds keys to the response (``usage``, ...); a ``finish_reason`` in it goes
    on the choice.
    """
    choice: dict[str, object] = {"message": reply}
    rest = dict(extra or {})
    if "finish_reason" in rest:
        choice["finish_reason"] = rest.pop("finish_reason")
    response = {"model": model, "choices": [choice], **rest}
    return exchange(
        CHAT_URL,
        {"model": model, "messages": messages},
        response,
        at=at,
        duration=duration,
        chunk_at=chunk_at,
    )


def tool_call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    """An assistant message's ``tool_calls`` entry."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def recorded_bodies(
    tape: Path, bodies: Sequence[bytes], redactor: Redactor, *, session_id: str
) -> list[bytes]:
    """POST ``bodies`` in turn through ``recording_client`` (a MockTransport answering
    ``{"ok": true}``) onto a new session in ``tape``; the request bodies read back."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"ok": True})

    header = SessionStarted(session_id=session_id, started_at=0.0)
    with open_session(tape, header) as writer:
        client = recording_client(writer, real=httpx.MockTransport(handler), redactor=redactor)
        with client:
            for body in bodies:
                client.post("http://127.0.0.1:9/v1/chat/completions", content=body)
    (session,) = TapeReader(tape).sessions()
    return [e.request.body for e in session.events[1:-1]]


def packed_tape(path: Path, session_id: str, plains: Sequence[dict[str, object]]) -> None:
    """A tape whose one session is ``plains``, each msgpack-packed as given (the first
    flagged as the start, the last as the end), written frame by frame as a writer would."""
    zstd = zstandard.ZstdCompressor(level=3).compressobj()
    out = [file_header("test")]
    for seq, plain in enumerate(plains):
        raw = msgpack.packb(plain, use_bin_type=True)
        last = seq == len(plains) - 1
        flush = zstandard.COMPRESSOBJ_FLUSH_FINISH if last else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        payload = zstd.compress(raw) + zstd.flush(flush)
        flags = FLAG_START if seq == 0 else FLAG_END if last else 0
        out.append(frame(flags, bytes.fromhex(session_id), seq, len(raw), payload))
    path.write_bytes(b"".join(out))


def stored_tape(path: Path, session_id: str, stored: Sequence[dict[str, object]]) -> None:
    """A tape whose one session holds the ``stored`` events, msgpack-packed as given,
    between its start and end (``packed_tape``)."""
    header = to_plain(SessionStarted(session_id=session_id, started_at=0.0))
    end = {"k": "session_ended", "at": 9.0, "status": "completed"}
    packed_tape(path, session_id, [header, *stored, end])


def process_gone(pid: int) -> bool:
    """The process is gone or a zombie (killed, not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


class OldPacker:
    """Packs events as an older writer stored its exchanges: ``exchange`` (format 1.0,
    the plain map with a request-body delta), ``exchange3`` (formats 1.2 to 2.0, chunk
    steps in microseconds, no assembled message) or ``exchange2`` (format 1.1, times in
    seconds), for the tests of reading older tapes.  Drop-in for a writer's ``_packer``."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._packer = Packer()

    def pack(self, plain: dict[str, Any], *, last: bool = False) -> bytes:
        if self._kind == "exchange" and plain.get("k") == "exchange":
            # The plain path of the packer (what an event with a request map takes).
            packed = self._packer.pack({**plain, "k": "plain-exchange"}, last=last)
            return msgpack.packb({**msgpack.unpackb(packed), "k": "exchange"}, use_bin_type=True)
        packed = self._packer.pack(plain, last=last)
        stored = msgpack.unpackb(packed)
        if stored.get("k") != "exchange4":
            return packed
        at, duration, q, r, error = stored["x"]
        if r is not None:
            r = [*r[:7], [step * 1000 for step in r[7]]]
        if self._kind == "exchange2":
            at, duration = (t / 1_000_000 if type(t) is int else t for t in (at, duration))
        x = [at, duration, q, r, error]
        return msgpack.packb({"k": self._kind, "x": x}, use_bin_type=True)


def forced_agent_env() -> dict[str, str]:
    """This process's environment for an ``evaltape`` subprocess that replays the reference
    agent: no provider keys, no agent settings from outside, the agent's forced strategy,
    and no bytecode, so an edited module is never served from a cache that predates the
    edit."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_")) and k != "PYTHONPATH"
    }
    return env | {"EVALTAPE_AGENT_STRATEGY": "forced", "PYTHONDONTWRITEBYTECODE": "1"}


RAY_TESTS = [
    pytest.mark.ray,
    pytest.mark.slow,
    # ray is not imported to decide: it reads its environment when imported, and
    # tests/test_ray_executor.py sets that environment first
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="ray is not installed (pip install evaltape[ray])",
    ),
]
"""The marks of a module of Ray tests (its ``pytestmark``)."""
