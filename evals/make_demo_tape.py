"""Write a small demonstration tape from a hand-written script of responses.

The tape's header says its responses came from a hand-written script, so it
is never mistaken for a recording of a real model.

    python evals/make_demo_tape.py demo.tape && evaltape show demo.tape
"""

from __future__ import annotations

import json
import sys
import time

from evaltape.recorder import (
    Chunk,
    Exchange,
    FileEntry,
    HarnessEvent,
    Mode,
    Request,
    Response,
    SessionStarted,
    Source,
    WorkspaceSnapshot,
    open_session,
)
from evaltape.recorder.tape import new_session_id

URL = "http://127.0.0.1:8080/v1/chat/completions"


def _sse(deltas: list[dict[str, object]]) -> tuple[Chunk, ...]:
    chunks = [
        Chunk(
            at=0.05 * i,
            data=f"data: {json.dumps({'choices': [{'index': 0, 'delta': d}]})}\n\n".encode(),
        )
        for i, d in enumerate(deltas)
    ]
    return (*chunks, Chunk(at=0.05 * len(chunks), data=b"data: [DONE]\n\n"))


def main(path: str) -> None:
    header = SessionStarted(
        session_id=new_session_id(),
        started_at=time.time(),
        case_id="demo/read-file",
        model="scripted",
        mode=Mode.SCRIPT,
        source=Source.SCRIPT,
        source_detail="hand-written script in evals/make_demo_tape.py",
    )
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "What does hello.py print?"},
    ]
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    clock = iter(float(i) for i in range(100))
    with open_session(path, header, clock=lambda: next(clock)) as tape:
        call = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "hello.py"}'},
        }
        replies = [
            _sse([{"role": "assistant", "tool_calls": [call]}, {}]),
            _sse([{"role": "assistant", "content": "It prints "}, {"content": "hello."}]),
        ]
        for turn, chunks in enumerate(replies):
            body = json.dumps(
                {"model": "scripted", "messages": messages, "tools": tools, "stream": True}
            ).encode()
            tape.append(
                Exchange(
                    at=tape.now(),
                    duration=0.2,
                    request=Request(
                        method="POST",
                        url=URL,
                        headers=(("content-type", "application/json"),),
                        body=body,
                    ),
                    response=Response(
                        status=200,
                        headers=(("content-type", "text/event-stream"),),
                        chunks=chunks,
                        streamed=True,
                    ),
                )
            )
            if turn == 0:
                tape.append(
                    HarnessEvent(at=tape.now(), name="tool", fields=(("tool", "read"), ("ms", 3)))
                )
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
                messages.append(
                    {"role": "tool", "tool_call_id": "call_1", "content": "print('hello')\n"}
                )
        tape.append(
            WorkspaceSnapshot(
                at=tape.now(), files=(FileEntry(path="hello.py", data=b"print('hello')\n"),)
            )
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo.tape")
