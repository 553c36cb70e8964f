"""A script's replies as exchanges of one flavour, and as a tape.

Each exchange carries the stand-in request described in ``_script.py``
(marked ``x-evaltape-script: any``) and the response the flavour's real API
would have sent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping

from .._events import (
    Chunk,
    Exchange,
    Mode,
    Request,
    Response,
    SessionStarted,
    Source,
)
from ..tape._writer import open_session
from ._anthropic import anthropic_error, anthropic_message, anthropic_stream
from ._openai import (
    chat_body,
    chat_stream,
    openai_error,
    response_object,
    responses_stream,
)
from ._provider import (
    CHUNK_GAP,
    DEFAULT_URLS,
    SCRIPT_MATCH_ANY,
    SCRIPT_MATCH_HEADER,
    ErrorReply,
    Reply,
    Script,
    ScriptFlavor,
    Step,
)
from ._render import Ctx, json_bytes

_Render = Callable[[Reply, Ctx], bytes]
_Stream = Callable[[Reply, Ctx], list[bytes]]

_BODY: Mapping[ScriptFlavor, _Render] = {
    ScriptFlavor.OPENAI_CHAT: chat_body,
    ScriptFlavor.OPENAI_RESPONSES: lambda r, c: json_bytes(response_object(r, c, done=True)),
    ScriptFlavor.ANTHROPIC_MESSAGES: lambda r, c: json_bytes(anthropic_message(r, c, done=True)),
}
_STREAM: Mapping[ScriptFlavor, _Stream] = {
    ScriptFlavor.OPENAI_CHAT: chat_stream,
    ScriptFlavor.OPENAI_RESPONSES: responses_stream,
    ScriptFlavor.ANTHROPIC_MESSAGES: anthropic_stream,
}


def _request(url: str, model: str, stream: bool) -> Request:
    """A stand-in request: the model and stream flag, marked to match any request."""
    return Request(
        method="POST",
        url=url,
        headers=(("content-type", "application/json"), (SCRIPT_MATCH_HEADER, SCRIPT_MATCH_ANY)),
        body=json_bytes({"model": model, "stream": stream}),
    )


def _url(script: Script, flavor: ScriptFlavor) -> str:
    url = DEFAULT_URLS[flavor]
    if script.base_url:
        url = script.base_url + url[url.index("/", len("https://")) :]
    return url


def _render(step: Step, flavor: ScriptFlavor, stream: bool, ctx: Ctx) -> tuple[Response, float]:
    """The response for one step and its duration."""
    request_id = (
        "req_" if flavor is ScriptFlavor.ANTHROPIC_MESSAGES else ""
    ) + f"script{ctx.index:04d}"
    id_header = "request-id" if flavor is ScriptFlavor.ANTHROPIC_MESSAGES else "x-request-id"
    if isinstance(step, ErrorReply):
        body = step.body
        if body is None:
            body = (
                anthropic_error(step)
                if flavor is ScriptFlavor.ANTHROPIC_MESSAGES
                else openai_error(step)
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
        ctx = Ctx(index=index, model=script.model, created=int(started_at + at))
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
