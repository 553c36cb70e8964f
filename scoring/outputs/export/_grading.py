"""The judge's call as a trace of its own, linked to the attempt it graded.

Backends total a trace's tokens and cost over every span in it (Phoenix,
Langfuse), so a judge span inside the attempt's trace would add the grading
to the agent's cost.  The judge's call is therefore the one span of a second
trace, ``grade {suite}/{case}``, in a session of its own (the run id with
``/grading``), with an OpenTelemetry link and an attribute naming the
attempt's trace and root span.  Its id is derived from the attempt's trace id,
so it is as stable as the attempt's.
"""

from __future__ import annotations

import json

from evaltape.recorder import Session, Usage, decode_call

from ...cost._pricing import Prices, call_cost
from ...judge._judgement import Judgement
from ...judge._role import judge_exchanges
from ._span_attrs import (
    cost_attrs,
    max_tokens_attrs,
    provider_name,
    server_attrs,
    usage_attrs,
)
from ._span_model import (
    Attrs,
    Span,
    SpanKind,
    SpanLink,
    TraceOptions,
    epoch_ns,
    grading_trace_id,
    span_id,
)


def grading_span(
    session: Session,
    judgement: Judgement | None,
    graded: Span,
    options: TraceOptions,
    prices: Prices,
) -> Span | None:
    """The judge's last call as the root of the grading trace; None when nobody judged."""
    judged = judge_exchanges(session)
    if not judged:
        return None
    exchange = judged[-1]
    call = decode_call(exchange)
    usage = call.usage if call is not None else Usage.unknown()
    model = (judgement.model if judgement is not None else "") or (
        call.model_requested if call is not None else ""
    )
    model = model or "unknown"
    cost = call_cost(prices, model, usage) if model != "unknown" else None
    provider = provider_name(() if call is None else (call,), exchange.request.url)
    out: Attrs = (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", provider),
        ("langfuse.observation.type", "evaluator"),
        ("gen_ai.request.model", model),
        *server_attrs(exchange.request.url),
        *max_tokens_attrs(exchange.request.body),
    )
    if call is not None and call.model_responded:
        out += (("gen_ai.response.model", call.model_responded),)
    out += usage_attrs(usage) + cost_attrs(cost)
    out += (
        ("evaltape.graded.trace_id", graded.trace_id.hex()),
        ("evaltape.graded.span_id", graded.span_id.hex()),
        ("langfuse.trace.metadata.graded_trace_id", json.dumps(graded.trace_id.hex())),
    )
    if judgement is not None:
        out += (
            ("evaltape.judge.rubric", judgement.rubric),
            ("evaltape.judge.state", judgement.state.value),
        )
        if judgement.score is not None:
            out += (("evaltape.judge.score", judgement.score),)
        if options.content and judgement.rationale:
            out += (("evaltape.judge.rationale", judgement.rationale),)
    failed = exchange.error is not None or (call is not None and bool(call.error))
    started = session.header.started_at
    tid = grading_trace_id(graded.trace_id)
    return Span(
        trace_id=tid,
        span_id=span_id(tid, "judge"),
        parent_span_id=b"",
        name=f"chat {model}",
        kind=SpanKind.CLIENT,
        start_ns=epoch_ns(started, exchange.at),
        end_ns=epoch_ns(started, exchange.at + exchange.duration),
        attributes=out,
        links=(
            SpanLink(
                trace_id=graded.trace_id,
                span_id=graded.span_id,
                attributes=(("evaltape.link", "graded attempt"),),
            ),
        ),
        error=failed,
        status_message="judge call failed" if failed else "",
    )
