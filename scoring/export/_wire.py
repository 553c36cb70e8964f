"""Spans as OTLP/HTTP protobuf: an ``ExportTraceServiceRequest`` body.

Encoded with ``opentelemetry-proto`` (the message classes the OpenTelemetry
SDK's exporters use) rather than through the SDK's tracer, so every span keeps
its recorded start and end time and its derived ids.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from evaltape.recorder import VERSION
from evaltape.scoring.export._span_model import Attrs, AttrValue, Span

CONTENT_TYPE = "application/x-protobuf"
"""The body's media type on the wire."""

SCOPE = "evaltape"
"""Instrumentation scope (and ``service.name``) of every span."""


def any_value(value: AttrValue) -> AnyValue:
    """One attribute value as OTLP's ``AnyValue``."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value]))


def key_values(attributes: Attrs) -> list[KeyValue]:
    """Attributes as OTLP key/values, in order."""
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes]


def _span(span: Span) -> PbSpan:
    status = (
        Status(code=Status.STATUS_CODE_ERROR, message=span.status_message)
        if span.error
        else Status(code=Status.STATUS_CODE_UNSET)
    )
    return PbSpan(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        kind=span.kind.value,  # type: ignore[arg-type]
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=max(span.start_ns, span.end_ns),
        attributes=key_values(span.attributes),
        events=[
            PbSpan.Event(time_unix_nano=e.time_ns, name=e.name, attributes=key_values(e.attributes))
            for e in span.events
        ],
        status=status,
    )


def encode_spans(spans: Iterable[Span], *, service_version: str = VERSION) -> bytes:
    """The serialized ``ExportTraceServiceRequest`` holding ``spans``."""
    resource = Resource(
        attributes=key_values(
            (
                ("service.name", SCOPE),
                ("service.version", service_version),
                ("telemetry.sdk.name", SCOPE),
                ("telemetry.sdk.language", "python"),
            )
        )
    )
    scope = InstrumentationScope(name=SCOPE, version=service_version)
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource,
                scope_spans=[ScopeSpans(scope=scope, spans=[_span(s) for s in spans])],
            )
        ]
    )
    data: bytes = request.SerializeToString()
    return data
