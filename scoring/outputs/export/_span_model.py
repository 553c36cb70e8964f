"""The span values an attempt's trace is made of, and the ids derived for them."""

from __future__ import annotations

import enum
import hashlib
import uuid
from typing import TypeAlias

import attrs

from ...results._records import AttemptResult

AttrValue: TypeAlias = str | bool | int | float | tuple[str, ...]
"""A span attribute's value: a scalar or an array of strings."""
Attrs: TypeAlias = tuple[tuple[str, AttrValue], ...]

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""Name of the span event that carries one score (GenAI semantic conventions)."""

TOOL_EVENT = "tool"
"""Harness event the agent logs after a tool ran: ``tool`` (name) and ``ms`` (duration)."""


class SpanKind(enum.Enum):
    """The OTLP span kinds a trace uses."""

    INTERNAL = 1
    """Work inside the harness (the attempt, a tool call)."""
    CLIENT = 3
    """A call to a remote service (a model API)."""


@attrs.frozen(kw_only=True)
class SpanEvent:
    """A point in time on a span, with attributes."""

    name: str
    """The event's name."""
    time_ns: int
    """Unix time in nanoseconds."""
    attributes: Attrs = ()
    """Key/value pairs."""


@attrs.frozen(kw_only=True)
class SpanLink:
    """A pointer from one span to a span of another trace (the grading trace to its attempt)."""

    trace_id: bytes
    """16 bytes."""
    span_id: bytes
    """8 bytes."""
    attributes: Attrs = ()
    """Key/value pairs."""


@attrs.frozen(kw_only=True)
class Span:
    """One span, ready to encode."""

    trace_id: bytes
    """16 bytes, shared by every span of the attempt."""
    span_id: bytes
    """8 bytes."""
    parent_span_id: bytes
    """The parent's span id; empty for the root."""
    name: str
    """``invoke_agent {agent}``, ``chat {model}``, ``execute_tool {name}``, ``judge {model}``."""
    kind: SpanKind
    """INTERNAL or CLIENT."""
    start_ns: int
    """Unix time in nanoseconds."""
    end_ns: int
    """Unix time in nanoseconds, never before ``start_ns``."""
    attributes: Attrs = ()
    """Key/value pairs, in a fixed order."""
    events: tuple[SpanEvent, ...] = ()
    """Span events (the root's evaluation results)."""
    links: tuple[SpanLink, ...] = ()
    """Links to spans of other traces."""
    error: bool = False
    """Status ERROR; otherwise the status is left unset."""
    status_message: str = ""
    """One line with the error status."""


@attrs.frozen(kw_only=True)
class ScoreValue:
    """One score of an attempt: ``passed``, ``judge`` or a check."""

    name: str
    """``passed``, ``verdict``, ``replay.change``, ``judge``, or ``check.<check name>``."""
    value: float | str
    """0/1 for a BOOLEAN score, 0-5 for the judge, the category of a CATEGORICAL one."""
    data_type: str
    """``BOOLEAN``, ``NUMERIC`` or ``CATEGORICAL`` (Langfuse's data types)."""
    comment: str = ""
    """Why (a reason, a check's detail, the judge's rationale); only with content."""
    metadata: tuple[tuple[str, str], ...] = ()
    """Key/value pairs sent with the score (the judge's grading trace id)."""


@attrs.frozen(kw_only=True)
class AttemptTrace:
    """The spans and scores of one attempt."""

    key: str
    """``attempt_key`` of the attempt."""
    spans: tuple[Span, ...]
    """The root first, then its children in time order, then the grading trace's span."""
    scores: tuple[ScoreValue, ...]
    """Every score; each is also an evaluation event on the root."""
    environment: str
    """The Langfuse environment the trace belongs to."""
    release: str = ""
    """The harness version that recorded the attempt ("" when unknown)."""
    scored_ns: int = 0
    """Unix nanoseconds the scores are dated (the attempt's end, so a resend is identical)."""

    @property
    def root(self) -> Span:
        """The ``invoke_agent`` span."""
        return self.spans[0]


@attrs.frozen(kw_only=True)
class TraceOptions:
    """What the caller decides about every trace of a run."""

    run_id: str
    """The run's id: the trace's session, and part of every id."""
    agent: str
    """The agent setting (``module:function`` or ``cmd:...``): the agent's name."""
    environment: str = "default"
    """Langfuse environment (lower case letters, digits, ``-`` and ``_``)."""
    user: str = ""
    """The user every trace is put under (``user.id``); "" for none."""
    content: bool = False
    """Put prompts, messages, tool arguments and results, reasons and rationale on spans."""


# -- ids ---------------------------------------------------------------------------


def trace_id(run_id: str, a: AttemptResult) -> bytes:
    """The attempt's 16-byte trace id: a hash of run id, suite, case, model and attempt."""
    seed = "\0".join(("evaltape-trace", run_id, a.suite, a.case_id, a.model, str(a.attempt)))
    return _nonzero(hashlib.sha256(seed.encode("utf-8")).digest()[:16])


def grading_trace_id(trace: bytes) -> bytes:
    """The 16-byte id of the trace that holds the judge's call for the attempt ``trace``."""
    return _nonzero(hashlib.sha256(b"evaltape-grading\0" + trace).digest()[:16])


GRADING_SESSION_SUFFIX = "/grading"
"""Appended to the run id for the session of the grading traces (kept out of the run's)."""


def span_id(trace: bytes, label: str) -> bytes:
    """An 8-byte span id derived from the trace id and the span's place (``chat/0``)."""
    return _nonzero(hashlib.sha256(trace + b"\0" + label.encode("utf-8")).digest()[:8])


def score_id(trace: bytes, name: str) -> str:
    """A stable UUID for one score of one trace, so sending it again overwrites it."""
    return str(uuid.UUID(bytes=hashlib.sha256(trace + b"\0score\0" + name.encode()).digest()[:16]))


def _nonzero(raw: bytes) -> bytes:
    """OTLP treats an all-zero id as invalid."""
    return raw if any(raw) else raw[:-1] + b"\1"


def epoch_ns(started_at: float, at: float = 0.0) -> int:
    """Unix nanoseconds of a time ``at`` seconds after a session started at ``started_at``.

    Both are kept to the microsecond (what a tape stores), so the sum is exact.
    """
    return (round(started_at * 1_000_000) + round(at * 1_000_000)) * 1000
