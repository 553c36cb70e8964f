"""One-line human descriptions of sessions and events (``evaltape show``)."""

from __future__ import annotations

from urllib.parse import urlsplit

from evaltape.recorder import (
    CallDecoder,
    Event,
    Exchange,
    HarnessEvent,
    ModelCall,
    RecordedSession,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Usage,
    WorkspaceSnapshot,
    decode_call,
)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def describe_usage(usage: Usage) -> str:
    """``tokens 1200 in (800 cached, 10 written), 35 out (20 reasoning)``, or ``tokens ?``."""
    if not usage.reported:
        return "tokens ?"
    cached = [
        f"{n} {label}"
        for n, label in ((usage.cache_read_tokens, "cached"), (usage.cache_write_tokens, "written"))
        if n
    ]
    line = f"tokens {usage.input_tokens} in" + (f" ({', '.join(cached)})" if cached else "")
    line += f", {usage.output_tokens} out"
    return line + (f" ({usage.reasoning_tokens} reasoning)" if usage.reasoning_tokens else "")


def describe_call(call: ModelCall) -> str:
    """``openai.chat gpt-4o | tool_calls [read, write] | tokens 120 in, 8 out``."""
    parts = [f"{call.api} {call.model_responded or call.model_requested or '?'}"]
    outcome = call.finish_reason or ("calls" if call.tool_calls else "")
    if call.tool_calls:
        outcome += " [" + ", ".join(c.name or "?" for c in call.tool_calls) + "]"
    if outcome:
        parts.append(outcome)
    parts.append(describe_usage(call.usage))
    if call.error:
        parts.append(f"error: {call.error}")
    return " | ".join(parts)


def describe_session(session: RecordedSession) -> str:
    """``session <id>: case X attempt N, model M, live from real_api, completed``."""
    h = session.header
    state = "complete" if session.complete else f"INCOMPLETE ({session.problem})"
    parts = [f"session {session.session_id}:"]
    if h.case_id:
        parts.append(f"case {h.case_id} attempt {h.attempt},")
    if h.model:
        parts.append(f"model {h.model},")
    source = h.source.value + (f" ({h.source_detail})" if h.source_detail else "")
    parts.append(f"{h.mode.value} from {source}, {len(session.events)} events, {state}")
    return " ".join(parts)


def describe_event(event: Event, decoder: CallDecoder | None = None) -> str:
    """One line per event, prefixed with its time offset.

    A model API exchange ends with its decoded call: API, model, finish
    reason, tool calls asked for, token usage, and the error if it failed.
    Pass one ``decoder`` for all events of a session, in order, to decode
    its conversation in linear time.
    """
    if isinstance(event, SessionStarted):
        return f"{0.0:8.3f}s start  {event.started_at:.3f} (epoch) seed={event.seed}"
    if isinstance(event, Exchange):
        req = event.request
        line = f"{event.at:8.3f}s http   {req.method} {urlsplit(req.url).path} "
        line += f"({_size(len(req.body))})"
        if event.response is not None:
            r = event.response
            kind = f"{len(r.chunks)} chunks" if r.streamed else _size(len(r.body))
            line += f" -> {r.status} {kind}"
        if event.error is not None:
            line += f" !! {event.error.type}: {event.error.message}"
        line += f" in {event.duration:.3f}s"
        call = decode_call(event) if decoder is None else decoder.decode(event)
        return line if call is None else f"{line} | {describe_call(call)}"
    if isinstance(event, HarnessEvent):
        fields = " ".join(f"{k}={v}" for k, v in event.fields)
        return f"{event.at:8.3f}s agent  {event.name} {fields}".rstrip()
    if isinstance(event, RunnerFact):
        return f"{event.at:8.3f}s runner {event.fact.value}: {event.message}"
    if isinstance(event, WorkspaceSnapshot):
        total = sum(len(f.data) for f in event.files)
        omitted = f", {len(event.omitted)} omitted" if event.omitted else ""
        return f"{event.at:8.3f}s files  {len(event.files)} files, {_size(total)}{omitted}"
    assert isinstance(event, SessionEnded)
    reason = f": {event.reason}" if event.reason else ""
    return f"{event.at:8.3f}s end    {event.status.value}{reason}"
