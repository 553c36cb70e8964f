"""One live attempt as a tree of OpenTelemetry spans, built from its recorded facts.

``attempt_trace`` is pure: it reads the attempt's run-record line, its folded
session and its score, and returns values.  The trace follows the
OpenTelemetry GenAI semantic conventions, with the attributes Langfuse reads
to name, group and type what it shows:

- the root span ``invoke_agent {agent}`` covers the session and carries the
  trace's metadata and one ``gen_ai.evaluation.result`` event per score, but no
  usage or cost (its children carry those; a total on the root would be
  counted twice by backends that add a trace's spans up);
- one CLIENT span ``chat {model}`` per model call, at its recorded start and
  end, with the response's model, id, finish reason, usage and cost;
- one ``execute_tool {name}`` span per tool call; its timing is the agent's
  ``tool`` harness event when it logged one, else the gap between the turn
  that asked for the call and the next one;
- the judge's call, as the one span of a separate grading trace linked to the
  attempt (``_grading``), so its tokens never count as the agent's.

Every span carries the run-level attributes (``run_attrs``): trace name
(``suite/case``), session (the run id, as ``langfuse.session.id`` and the
standard ``session.id``), tags, environment, release and user.

Ids are derived from the run id, suite, case, model and attempt, so the same
attempt always gets the same trace id and span ids.  Nothing the model, the
agent or the user wrote (prompts, messages, tool arguments and results, file
content, reasons, the judge's rationale) is put on a span unless ``content``
is set.
"""

from __future__ import annotations

import json

import attrs

from evaltape.recorder import ModelCall, Session

from ...checks._score import Score
from ...cost._pricing import Prices, call_cost
from ...judge._judgement import Judgement
from ...results._records import AttemptResult, Verdict, attempt_key
from ._child_spans import chat_span, tool_spans
from ._grading import grading_span
from ._span_attrs import provider_name
from ._span_model import (
    GRADING_SESSION_SUFFIX,
    AttemptTrace,
    Attrs,
    Span,
    SpanKind,
    TraceOptions,
    epoch_ns,
    span_id,
    trace_id,
)
from ._span_scores import attempt_scores, evaluation_event

# -- the tree --------------------------------------------------------------------


def attempt_trace(
    attempt: AttemptResult,
    session: Session,
    score: Score | None,
    judgement: Judgement | None,
    options: TraceOptions,
    prices: Prices,
) -> AttemptTrace:
    """The spans and scores of one scored attempt (see the module docstring)."""
    tid = trace_id(options.run_id, attempt)
    root_id = span_id(tid, "invoke_agent")
    started = session.header.started_at
    release = session.header.harness_version or ""
    provider = provider_name((t.call for t in session.turns), _first_url(session))
    children: list[Span] = []
    for turn in session.turns:
        cost = call_cost(prices, _priced_model(turn.call, attempt), turn.call.usage)
        children.append(chat_span(session, turn, provider, cost, tid, root_id, options))
    children.extend(tool_spans(session, tid, root_id, options))
    children.sort(key=lambda s: (s.start_ns, s.span_id))
    scores = attempt_scores(attempt, score, judgement, content=options.content)
    start = epoch_ns(started)
    end = max([epoch_ns(started, session.duration), *(c.end_ns for c in children)])
    root = Span(
        trace_id=tid,
        span_id=root_id,
        parent_span_id=b"",
        name=f"invoke_agent {options.agent}",
        kind=SpanKind.INTERNAL,
        start_ns=start,
        end_ns=end,
        attributes=_root_attrs(attempt, session, provider, options),
        events=tuple(evaluation_event(s, end, options.content) for s in scores),
        error=attempt.verdict is Verdict.ERROR and not attempt.quarantined,
        status_message=_status(attempt, session, options.content),
    )
    meta = trace_metadata(attempt, session, options)
    shared = run_attrs(
        trace_name=f"{attempt.suite}/{attempt.case_id}",
        session=options.run_id,
        tags=_tags(attempt),
        release=release,
        options=options,
        metadata=meta,
    )
    spans = [_with(s, shared) for s in (root, *children)]
    grading = grading_span(session, judgement, root, options, prices)
    if grading is not None:
        graded = run_attrs(
            trace_name=f"grade {attempt.suite}/{attempt.case_id}",
            session=options.run_id + GRADING_SESSION_SUFFIX,
            tags=(attempt.suite, "grading"),
            release=release,
            options=options,
            metadata=meta,
        )
        spans.append(_with(grading, graded))
        link = (("grading_trace_id", grading.trace_id.hex()),)
        scores = tuple(attrs.evolve(s, metadata=link) if s.name == "judge" else s for s in scores)
    return AttemptTrace(
        key=attempt_key(attempt),
        spans=tuple(spans),
        scores=scores,
        environment=options.environment,
        release=release,
        scored_ns=end,
    )


def run_attrs(
    *,
    trace_name: str,
    session: str,
    tags: tuple[str, ...],
    release: str,
    options: TraceOptions,
    metadata: Attrs = (),
) -> Attrs:
    """What every span of a trace carries, so filtering observations by any of it finds them
    all: trace name, session (Langfuse's and the standard ``session.id``), tags,
    environment, release, user, the trace metadata and run id (the Langfuse SDK's
    ``propagate_attributes`` puts the same on every observation)."""
    out: Attrs = (
        ("langfuse.trace.name", trace_name),
        ("langfuse.session.id", session),
        ("session.id", session),
        ("langfuse.trace.tags", tags),
        ("langfuse.environment", options.environment),
    )
    if release:
        out += (("langfuse.release", release),)
    if options.user:
        out += (("langfuse.user.id", options.user), ("user.id", options.user))
    return (*out, *metadata, ("evaltape.run.id", options.run_id))


def _with(span: Span, shared: Attrs) -> Span:
    return attrs.evolve(span, attributes=span.attributes + shared)


def _tags(attempt: AttemptResult) -> tuple[str, ...]:
    tags = tuple(dict.fromkeys((attempt.suite, attempt.model, attempt.verdict.value)))
    return (*tags, "quarantined") if attempt.quarantined else tags


def _first_url(session: Session) -> str:
    return session.turns[0].exchange.request.url if session.turns else ""


def _priced_model(call: ModelCall, attempt: AttemptResult) -> str:
    return call.model_responded or call.model_requested or attempt.model


def _status(attempt: AttemptResult, session: Session, content: bool) -> str:
    if attempt.verdict is not Verdict.ERROR or attempt.quarantined:
        return ""
    if content and attempt.reason:
        return attempt.reason
    end = session.end
    return end.status.value if end is not None else "the session has no end"


def trace_metadata(attempt: AttemptResult, session: Session, options: TraceOptions) -> Attrs:
    """The trace's metadata as ``langfuse.trace.metadata.<key>``, each value JSON-encoded
    (strings included) as the Langfuse SDK encodes propagated metadata.  ``attempt`` is
    1-based, as the command line prints it."""
    values: list[tuple[str, object]] = [
        ("suite", attempt.suite),
        ("case", attempt.case_id),
        ("model", attempt.model),
        ("attempt", attempt.attempt + 1),
        ("verdict", attempt.verdict.value),
        ("mode", attempt.mode.value),
        ("session_id", attempt.session_id),
        ("tape", attempt.tape),
        ("quarantined", attempt.quarantined),
        ("known_gap", attempt.known_gap),
        ("tainted", attempt.tainted),
    ]
    if attempt.change:
        values.append(("change", attempt.change))
    if attempt.verdict is Verdict.INTERRUPTED:  # cut short by a crash, recovered
        values.append(("incomplete", True))
    if session.header.harness_commit:
        values.append(("commit", session.header.harness_commit))
    if options.content and attempt.reason:
        values.append(("reason", attempt.reason))
    return tuple((f"{METADATA_PREFIX}{k}", json.dumps(v, ensure_ascii=False)) for k, v in values)


METADATA_PREFIX = "langfuse.trace.metadata."
"""Where Langfuse reads a trace's metadata, one attribute per key."""


def _root_attrs(
    attempt: AttemptResult, session: Session, provider: str, options: TraceOptions
) -> Attrs:
    header = session.header
    end = session.end
    out: Attrs = (
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.provider.name", provider),
        ("gen_ai.agent.name", options.agent),
        ("gen_ai.request.model", attempt.model),
        ("langfuse.observation.type", "agent"),
        ("evaltape.suite", attempt.suite),
        ("evaltape.case.id", attempt.case_id),
        ("evaltape.attempt", attempt.attempt),
        ("evaltape.verdict", attempt.verdict.value),
        ("evaltape.session.id", attempt.session_id),
    )
    if header.seed is not None:
        out += (("gen_ai.request.seed", header.seed),)
    if attempt.verdict is Verdict.INTERRUPTED:  # cut short by a crash, recovered
        out += (("evaltape.incomplete", True),)
    if attempt.verdict is Verdict.ERROR and not attempt.quarantined:
        out += (("error.type", end.status.value if end is not None else "incomplete"),)
    if options.content:
        first = session.turns[0].call if session.turns else None
        users = [m.text for m in first.input_messages if m.role == "user"] if first else []
        if users:
            out += (("langfuse.observation.input", users[-1]), ("langfuse.trace.input", users[-1]))
        out += (
            ("langfuse.observation.output", session.reply),
            ("langfuse.trace.output", session.reply),
        )
    return out
