"""An attempt's scores as Langfuse score bodies, posted to its scores API.

Langfuse does not read scores from OTLP spans, so each score is posted to
``POST {host}/api/public/scores`` against the attempt's trace and its root
observation (the ``invoke_agent`` span).  Each body carries a stable ``id``
derived from the trace id and the score's name, so posting it again (a
retry, ``evaltape export --again``) overwrites the score instead of adding a
second one.  Each is dated at the attempt's end (``timestamp``), so a resend
is identical, and the judge's score names the grading trace in its metadata.
"""

from __future__ import annotations

import datetime
import json

from ._config import Target
from ._send import Sender
from ._span_model import AttemptTrace, score_id


def score_bodies(trace: AttemptTrace) -> tuple[dict[str, object], ...]:
    """One JSON body per score, each targeting the trace and its root span."""
    root = trace.root
    bodies = []
    for score in trace.scores:
        body: dict[str, object] = {
            "id": score_id(root.trace_id, score.name),
            "traceId": root.trace_id.hex(),
            "observationId": root.span_id.hex(),
            "name": score.name,
            "value": score.value,
            "dataType": score.data_type,
            "environment": trace.environment,
            "timestamp": _iso(trace.scored_ns),
        }
        if score.comment:
            body["comment"] = score.comment
        if score.metadata:
            body["metadata"] = dict(score.metadata)
        bodies.append(body)
    return tuple(bodies)


def post_score(sender: Sender, target: Target, body: dict[str, object]) -> None:
    """Post one score body.  Raises ``ExportFailed``."""
    sender.post(target, json.dumps(body).encode("utf-8"), "application/json")


def _iso(ns: int) -> str:
    """Unix nanoseconds as an ISO 8601 UTC time to the microsecond (``...Z``)."""
    when = datetime.datetime.fromtimestamp(ns // 1000 / 1_000_000, tz=datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
