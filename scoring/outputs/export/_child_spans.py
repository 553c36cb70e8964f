"""The spans under an attempt's root: one per model call, one per tool call."""

from __future__ import annotations

from collections.abc import Iterable

from evaltape.recorder import HarnessEvent, Session, ToolCallRecord, Turn

from ._span_attrs import (
    cost_attrs,
    max_tokens_attrs,
    messages_json,
    output_json,
    server_attrs,
    usage_attrs,
)
from ._span_model import (
    TOOL_EVENT,
    Attrs,
    Span,
    SpanKind,
    TraceOptions,
    epoch_ns,
    span_id,
)


def chat_span(
    session: Session,
    turn: Turn,
    provider: str,
    cost: float | None,
    tid: bytes,
    parent: bytes,
    options: TraceOptions,
) -> Span:
    exchange, call = turn.exchange, turn.call
    model = call.model_requested or "unknown"
    out: Attrs = (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", provider),
        ("gen_ai.request.model", model),
        *server_attrs(exchange.request.url),
        *max_tokens_attrs(exchange.request.body),
    )
    if call.model_responded:
        out += (("gen_ai.response.model", call.model_responded),)
    if call.response_id:
        out += (("gen_ai.response.id", call.response_id),)
    if call.finish_reason:
        out += (("gen_ai.response.finish_reasons", (call.finish_reason,)),)
    out += usage_attrs(call.usage) + cost_attrs(cost)
    if call.status is not None:
        out += (("http.response.status_code", call.status),)
    failed = exchange.error is not None or bool(call.error)
    message = ""
    if failed:
        kind = exchange.error.type if exchange.error is not None else str(call.status or "error")
        out += (("error.type", kind),)
        message = kind
        if options.content:
            message = call.error or (exchange.error.message if exchange.error else "")
    if options.content:
        sent, answered = messages_json(call.input_messages), output_json(call)
        out += (
            ("gen_ai.input.messages", sent),
            ("gen_ai.output.messages", answered),
            ("langfuse.observation.input", sent),
            ("langfuse.observation.output", answered),
        )
    started = session.header.started_at
    return Span(
        trace_id=tid,
        span_id=span_id(tid, f"chat/{turn.index}"),
        parent_span_id=parent,
        name=f"chat {model}",
        kind=SpanKind.CLIENT,
        start_ns=epoch_ns(started, exchange.at),
        end_ns=epoch_ns(started, exchange.at + exchange.duration),
        attributes=out,
        error=failed,
        status_message=message,
    )


def tool_windows(session: Session) -> tuple[tuple[float, float], ...]:
    """(start, end) in session seconds of each tool call, in ``session.tool_calls`` order.

    The agent's ``tool`` harness events (``tool``=name, ``ms``=duration,
    logged when the tool returned) are matched to the calls in order, per
    tool name.  A call without one spans from the end of the turn that asked
    for it to the start of the next turn (the session's end after the last).
    """
    logged: dict[str, list[HarnessEvent]] = {}
    for event in session.harness:
        if event.name == TOOL_EVENT:
            name = str(dict(event.fields).get("tool", ""))
            logged.setdefault(name, []).append(event)
    windows = []
    for record in session.tool_calls:
        asked = session.turns[record.turn].exchange
        floor = asked.at + asked.duration
        nxt = record.turn + 1
        ceiling = session.turns[nxt].exchange.at if nxt < len(session.turns) else session.duration
        queue = logged.get(record.call.name, [])
        while queue and queue[0].at < floor:
            queue.pop(0)
        if queue:
            event = queue.pop(0)
            ms = dict(event.fields).get("ms")
            took = float(ms) / 1000 if isinstance(ms, int | float) else 0.0
            windows.append((max(floor, event.at - took), event.at))
        else:
            windows.append((floor, max(floor, ceiling)))
    return tuple(windows)


def tool_spans(
    session: Session, tid: bytes, parent: bytes, options: TraceOptions
) -> Iterable[Span]:
    started = session.header.started_at
    for n, (record, (start, end)) in enumerate(
        zip(session.tool_calls, tool_windows(session), strict=True)
    ):
        yield Span(
            trace_id=tid,
            span_id=span_id(tid, f"tool/{n}"),
            parent_span_id=parent,
            name=f"execute_tool {record.call.name}",
            kind=SpanKind.INTERNAL,
            start_ns=epoch_ns(started, start),
            end_ns=epoch_ns(started, end),
            attributes=_tool_attrs(record, options),
        )


def _tool_attrs(record: ToolCallRecord, options: TraceOptions) -> Attrs:
    out: Attrs = (
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", record.call.name),
        ("gen_ai.tool.type", "function"),
    )
    if record.call.id:
        out += (("gen_ai.tool.call.id", record.call.id),)
    if options.content:
        out += (
            ("gen_ai.tool.call.arguments", record.call.arguments),
            ("langfuse.observation.input", record.call.arguments),
        )
        if record.result is not None:
            out += (
                ("gen_ai.tool.call.result", record.result),
                ("langfuse.observation.output", record.result),
            )
    return out
