"""An attempt's span values as OpenTelemetry SDK spans, with their recorded times and ids.

The spans are started and ended through the SDK's own ``Tracer`` (one
``TracerProvider`` per attempt, whose resource carries the run's release and
environment), at the start and end times the tape recorded.  Their ids come
from ``PlannedIds``, an SDK ``IdGenerator`` that hands out the id derived for
the span about to start, so exporting an attempt again gives the same trace
and span ids.  Nothing here reads the process environment: the sampler, the
limits and the resource are passed in explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.sdk.version import __version__ as SDK_VERSION
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from evaltape.recorder import VERSION

from ._span_model import Span, SpanKind

SCOPE = "evaltape"
"""Instrumentation scope of every span."""

LIMITS = SpanLimits(
    max_attributes=512,
    max_events=512,
    max_links=16,
    max_span_attributes=512,
    max_event_attributes=64,
    max_link_attributes=16,
    max_attribute_length=10_000_000,
    max_span_attribute_length=10_000_000,
)
"""Explicit limits (the SDK's defaults would read ``OTEL_*_LIMIT`` from the process)."""

_KINDS = {
    SpanKind.INTERNAL: trace_api.SpanKind.INTERNAL,
    SpanKind.CLIENT: trace_api.SpanKind.CLIENT,
}


class PlannedIds(IdGenerator):
    """Gives the SDK the ids derived for the span it is about to start."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        """The planned trace id (used for a root span only)."""
        return self.trace_id

    def generate_span_id(self) -> int:
        """The planned span id."""
        return self.span_id


class _Collect(SpanProcessor):
    """Keeps every ended span, in order."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def resource(attributes: Sequence[tuple[str, str]], *, environment: str, release: str) -> Resource:
    """The resource of an attempt's spans: the user's ``OTEL_RESOURCE_ATTRIBUTES`` and
    service name, the SDK's identity, the environment (``deployment.environment.name``,
    its older name ``deployment.environment``, ``langfuse.environment``) and the release
    (``service.version``, ``langfuse.release``)."""
    out: dict[str, str] = {
        "telemetry.sdk.name": "opentelemetry",
        "telemetry.sdk.language": "python",
        "telemetry.sdk.version": SDK_VERSION,
        "service.version": release or VERSION,
    }
    out.update(attributes)
    out |= {
        "deployment.environment.name": environment,
        "deployment.environment": environment,
        "langfuse.environment": environment,
    }
    if release:
        out["langfuse.release"] = release
    return Resource(out)


def _context(trace_id: bytes, span_id: bytes) -> SpanContext:
    return SpanContext(
        trace_id=int.from_bytes(trace_id, "big"),
        span_id=int.from_bytes(span_id, "big"),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def sdk_spans(spans: Sequence[Span], res: Resource) -> tuple[ReadableSpan, ...]:
    """``spans`` started and ended through an SDK tracer, in order, ready to export."""
    ids = PlannedIds()
    collect = _Collect()
    provider = TracerProvider(
        sampler=ALWAYS_ON,
        resource=res,
        shutdown_on_exit=False,
        id_generator=ids,
        span_limits=LIMITS,
    )
    provider.add_span_processor(collect)
    tracer = provider.get_tracer(SCOPE, VERSION)
    for s in spans:
        ids.trace_id = int.from_bytes(s.trace_id, "big")
        ids.span_id = int.from_bytes(s.span_id, "big")
        parent = (
            trace_api.set_span_in_context(NonRecordingSpan(_context(s.trace_id, s.parent_span_id)))
            if s.parent_span_id
            else Context()
        )
        span = tracer.start_span(
            s.name,
            context=parent,
            kind=_KINDS[s.kind],
            attributes=dict(s.attributes),
            links=[Link(_context(k.trace_id, k.span_id), dict(k.attributes)) for k in s.links],
            start_time=s.start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
        for event in s.events:
            span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
        if s.error:
            span.set_status(Status(StatusCode.ERROR, s.status_message or None))
        span.end(end_time=max(s.start_ns, s.end_ns))
    provider.shutdown()
    return tuple(collect.spans)
