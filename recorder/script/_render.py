"""What every scripted flavour's rendering shares: JSON, word pieces, usage, SSE.

Replies are streamed the way models stream: text word by word, tool
arguments in 16-character slices.
"""

from __future__ import annotations

import json
import re

import attrs

from ._provider import Reply, ScriptedCall, ScriptedUsage


def json_bytes(value: object) -> bytes:
    """Compact JSON, as the APIs send it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def pieces(text: str, size: int = 0) -> list[str]:
    """Split text as a model streams it: words with their trailing spaces, or
    fixed-size slices when ``size`` is set."""
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def usage_of(reply: Reply) -> ScriptedUsage:
    """The reply's usage, or one output token per streamed piece."""
    if reply.usage is not None:
        return reply.usage
    out = len(pieces(reply.text)) + sum(len(pieces(c.arguments, 16)) for c in reply.tool_calls)
    return ScriptedUsage(input_tokens=0, output_tokens=max(1, out))


def finish_of(reply: Reply) -> str:
    """The reply's finish reason, derived from its tool calls when not given."""
    return reply.finish or ("tool_calls" if reply.tool_calls else "stop")


@attrs.frozen(kw_only=True)
class Ctx:
    """What a rendered reply needs besides the reply: its position, model and time."""

    index: int
    model: str
    created: int

    def call_id(self, k: int, call: ScriptedCall, prefix: str) -> str:
        return call.id or f"{prefix}script{self.index:03d}x{k}"


def sse_events(events: list[tuple[str, object]], *, named: bool) -> list[bytes]:
    """One ``data:`` event per item (``event:`` lines too when ``named``)."""
    out = []
    for name, data in events:
        payload = data if isinstance(data, bytes) else json_bytes(data)
        head = f"event: {name}\n".encode() if named and name else b""
        out.append(head + b"data: " + payload + b"\n\n")
    return out
