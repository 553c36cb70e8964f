"""One live attempt as a tree of OpenTelemetry spans, built from its recorded facts.

``attempt_trace`` is pure: it reads the attempt's run-record line, its folded
session and its score, and returns values.  The trace follows the
OpenTelemetry GenAI semantic conventions, with the attributes Langfuse reads
to name, group and type what it shows:

- the root span ``invoke_agent {agent}`` covers the session, carries the
  aggregate usage, the trace's name (``suite/case``), session (run id),
  environment, release, tags and metadata, and one ``gen_ai.evaluation.result``
  event per score;
- one CLIENT span ``chat {model}`` per model call, at its recorded start and
  end, with the response's model, id, finish reason, usage and cost;
- one ``execute_tool {name}`` span per tool call; its timing is the agent's
  ``tool`` harness event when it logged one, else the gap between the turn
  that asked for the call and the next one;
- one judge span (a Langfuse evaluator) with the judge's own usage and cost.

Ids are derived from the run id, suite, case, model and attempt, so the same
attempt always gets the same trace id and span ids.  Nothing the model, the
agent or the user wrote (prompts, messages, tool arguments and results, file
content, reasons, the judge's rationale) is put on a span unless ``content``
is set.
"""

from __future__ import annotations

import enum
import hashlib
import json
import uuid
from collections.abc import Iterable
from typing import TypeAlias
from urllib.parse import urlsplit

import attrs

from evaltape.recorder import (
    HarnessEvent,
    Message,
    ModelCall,
    Session,
    ToolCallRecord,
    Turn,
    Usage,
    decode_call,
)
from evaltape.scoring.checks._score import Check, Score
from evaltape.scoring.cost._pricing import Prices, call_cost
from evaltape.scoring.judge._judgement import Judgement
from evaltape.scoring.judge._role import judge_exchanges
from evaltape.scoring.results._records import AttemptResult, Verdict, attempt_key

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
    error: bool = False
    """Status ERROR; otherwise the status is left unset."""
    status_message: str = ""
    """One line with the error status."""


@attrs.frozen(kw_only=True)
class ScoreValue:
    """One score of an attempt: ``passed``, ``judge`` or a check."""

    name: str
    """``passed``, ``judge``, or ``check.<check name>``."""
    value: float
    """0/1 for a BOOLEAN score, 0-5 for the judge."""
    data_type: str
    """``BOOLEAN`` or ``NUMERIC`` (Langfuse's data types)."""
    comment: str = ""
    """Why (a reason, a check's detail, the judge's rationale); only with content."""


@attrs.frozen(kw_only=True)
class AttemptTrace:
    """The spans and scores of one attempt."""

    key: str
    """``attempt_key`` of the attempt."""
    spans: tuple[Span, ...]
    """The root first, then its children in time order."""
    scores: tuple[ScoreValue, ...]
    """Every score; each is also an evaluation event on the root."""
    environment: str
    """The Langfuse environment the trace belongs to."""

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
    content: bool = False
    """Put prompts, messages, tool arguments and results, reasons and rationale on spans."""


# -- ids ---------------------------------------------------------------------------


def trace_id(run_id: str, a: AttemptResult) -> bytes:
    """The attempt's 16-byte trace id: a hash of run id, suite, case, model and attempt."""
    seed = "\0".join(("evaltape-trace", run_id, a.suite, a.case_id, a.model, str(a.attempt)))
    return _nonzero(hashlib.sha256(seed.encode("utf-8")).digest()[:16])


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


# -- attributes ------------------------------------------------------------------


def provider_name(calls: Iterable[ModelCall], url: str = "") -> str:
    """``openai``, ``anthropic``, or ``_OTHER`` (the conventions' value for anything else)."""
    for call in calls:
        if call.api.startswith("openai"):
            return "openai"
        if call.api.startswith("anthropic"):
            return "anthropic"
    host = (urlsplit(url).hostname or "").lower()
    if host.endswith("openai.com"):
        return "openai"
    if host.endswith("anthropic.com"):
        return "anthropic"
    return "_OTHER"


def usage_attrs(usage: Usage) -> Attrs:
    """``gen_ai.usage.*`` of ``usage``; none when the API reported no usage."""
    if not usage.reported and usage.total_tokens == 0:
        return ()
    return (
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    )


def cost_attrs(cost: float | None) -> Attrs:
    """The cost in USD, as Langfuse reads it and as a plain attribute; none when unknown."""
    if cost is None:
        return ()
    return (
        ("langfuse.observation.cost_details", json.dumps({"total": cost})),
        ("evaltape.cost_usd", cost),
    )


def _server(url: str) -> Attrs:
    parts = urlsplit(url)
    if not parts.hostname:
        return ()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (("server.address", parts.hostname), ("server.port", port))


def _messages_json(messages: Iterable[Message]) -> str:
    items = []
    for m in messages:
        parts: list[dict[str, object]] = []
        if m.role == "tool":
            parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.text})
        elif m.text:
            parts.append({"type": "text", "content": m.text})
        for call in m.tool_calls:
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
        items.append({"role": m.role, "parts": parts})
    return json.dumps(items, ensure_ascii=False)


def _output_json(call: ModelCall) -> str:
    message = Message(role="assistant", text=call.output_text, tool_calls=call.tool_calls)
    data = json.loads(_messages_json((message,)))
    data[0]["finish_reason"] = call.finish_reason
    return json.dumps(data, ensure_ascii=False)


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
    provider = provider_name((t.call for t in session.turns), _first_url(session))
    children: list[Span] = []
    total_cost: float | None = 0.0 if session.turns else None
    for turn in session.turns:
        cost = call_cost(prices, _priced_model(turn.call, attempt), turn.call.usage)
        children.append(_chat_span(session, turn, provider, cost, tid, root_id, options))
        total_cost = None if cost is None or total_cost is None else total_cost + cost
    children.extend(_tool_spans(session, tid, root_id, options))
    judge = _judge_span(session, judgement, tid, root_id, options, prices)
    if judge is not None:
        children.append(judge)
    children.sort(key=lambda s: (s.start_ns, s.span_id))
    scores = attempt_scores(attempt, score, judgement, content=options.content)
    start = epoch_ns(started)
    end = max([epoch_ns(started, session.duration), *(c.end_ns for c in children)])
    if attempt.cost is not None:
        total_cost = attempt.cost
    root = Span(
        trace_id=tid,
        span_id=root_id,
        parent_span_id=b"",
        name=f"invoke_agent {options.agent}",
        kind=SpanKind.INTERNAL,
        start_ns=start,
        end_ns=end,
        attributes=_root_attrs(attempt, session, provider, total_cost, options),
        events=tuple(_evaluation_event(s, end, options.content) for s in scores),
        error=attempt.verdict is Verdict.ERROR and not attempt.quarantined,
        status_message=_status(attempt, session, options.content),
    )
    return AttemptTrace(
        key=attempt_key(attempt),
        spans=(root, *children),
        scores=scores,
        environment=options.environment,
    )


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


def _root_attrs(
    attempt: AttemptResult,
    session: Session,
    provider: str,
    cost: float | None,
    options: TraceOptions,
) -> Attrs:
    header = session.header
    end = session.end
    release = header.harness_version or ""
    meta: Attrs = (
        ("langfuse.trace.metadata.suite", attempt.suite),
        ("langfuse.trace.metadata.case", attempt.case_id),
        ("langfuse.trace.metadata.model", attempt.model),
        ("langfuse.trace.metadata.attempt", attempt.attempt),
        ("langfuse.trace.metadata.verdict", attempt.verdict.value),
        ("langfuse.trace.metadata.mode", attempt.mode.value),
        ("langfuse.trace.metadata.session_id", attempt.session_id),
        ("langfuse.trace.metadata.tape", attempt.tape),
        ("langfuse.trace.metadata.quarantined", attempt.quarantined),
        ("langfuse.trace.metadata.known_gap", attempt.known_gap),
        ("langfuse.trace.metadata.tainted", attempt.tainted),
    )
    if header.harness_commit:
        meta += (("langfuse.trace.metadata.commit", header.harness_commit),)
    if options.content and attempt.reason:
        meta += (("langfuse.trace.metadata.reason", attempt.reason),)
    tags = tuple(dict.fromkeys((attempt.suite, attempt.model, attempt.verdict.value)))
    if attempt.quarantined:
        tags += ("quarantined",)
    out: Attrs = (
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.provider.name", provider),
        ("gen_ai.agent.name", options.agent),
        ("gen_ai.request.model", attempt.model),
        *usage_attrs(session.usage),
        *cost_attrs(cost),
        ("langfuse.observation.type", "agent"),
        ("langfuse.trace.name", f"{attempt.suite}/{attempt.case_id}"),
        ("langfuse.session.id", options.run_id),
        ("langfuse.environment", options.environment),
        ("langfuse.trace.tags", tags),
        *meta,
        ("evaltape.run.id", options.run_id),
        ("evaltape.suite", attempt.suite),
        ("evaltape.case.id", attempt.case_id),
        ("evaltape.attempt", attempt.attempt),
        ("evaltape.verdict", attempt.verdict.value),
        ("evaltape.session.id", attempt.session_id),
    )
    if release:
        out += (("langfuse.release", release),)
    if header.seed is not None:
        out += (("gen_ai.request.seed", header.seed),)
    if attempt.verdict is Verdict.ERROR and not attempt.quarantined:
        out += (("error.type", end.status.value if end is not None else "incomplete"),)
    if options.content:
        out += (("langfuse.trace.output", session.reply),)
        first = session.turns[0].call if session.turns else None
        users = [m.text for m in first.input_messages if m.role == "user"] if first else []
        if users:
            out += (("langfuse.trace.input", users[-1]),)
    return out


def _chat_span(
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
        *_server(exchange.request.url),
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
        out += (
            ("gen_ai.input.messages", _messages_json(call.input_messages)),
            ("gen_ai.output.messages", _output_json(call)),
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


def _tool_spans(
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
        out += (("gen_ai.tool.call.arguments", record.call.arguments),)
        if record.result is not None:
            out += (("gen_ai.tool.call.result", record.result),)
    return out


def _judge_span(
    session: Session,
    judgement: Judgement | None,
    tid: bytes,
    parent: bytes,
    options: TraceOptions,
    prices: Prices,
) -> Span | None:
    judged = judge_exchanges(session)
    if not judged:
        return None
    exchange = judged[-1]
    call = decode_call(exchange)
    usage = call.usage if call is not None else Usage.unknown()
    model = (judgement.model if judgement is not None else "") or (
        call.model_requested if call is not None else ""
    )
    cost = call_cost(prices, model, usage) if model else None
    out: Attrs = (
        ("gen_ai.operation.name", "chat"),
        ("langfuse.observation.type", "evaluator"),
        ("gen_ai.request.model", model or "unknown"),
        *_server(exchange.request.url),
        *usage_attrs(usage),
        *cost_attrs(cost),
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
    return Span(
        trace_id=tid,
        span_id=span_id(tid, "judge"),
        parent_span_id=parent,
        name=f"judge {model or 'unknown'}",
        kind=SpanKind.CLIENT,
        start_ns=epoch_ns(started, exchange.at),
        end_ns=epoch_ns(started, exchange.at + exchange.duration),
        attributes=out,
        error=failed,
        status_message="judge call failed" if failed else "",
    )


# -- scores ----------------------------------------------------------------------


def attempt_scores(
    attempt: AttemptResult, score: Score | None, judgement: Judgement | None, *, content: bool
) -> tuple[ScoreValue, ...]:
    """``passed`` (BOOLEAN), ``judge`` (NUMERIC 0-5) when scored, one BOOLEAN per check."""
    passed = attempt.verdict is Verdict.PASSED
    out = [
        ScoreValue(
            name="passed",
            value=1.0 if passed else 0.0,
            data_type="BOOLEAN",
            comment=attempt.reason if content else "",
        )
    ]
    judge_score = judgement.score if judgement is not None else attempt.judge_score
    if judge_score is not None:
        rationale = judgement.rationale if judgement is not None else ""
        out.append(
            ScoreValue(
                name="judge",
                value=float(judge_score),
                data_type="NUMERIC",
                comment=rationale if content else "",
            )
        )
    seen: dict[str, int] = {}
    for check in score.checks if score is not None else ():
        if check.ran:  # a check that did not run is no evidence either way: not a 0, not a 1
            out.append(_check_score(check, seen, content))
    return tuple(out)


def _check_score(check: Check, seen: dict[str, int], content: bool) -> ScoreValue:
    seen[check.name] = seen.get(check.name, 0) + 1
    suffix = f"#{seen[check.name]}" if seen[check.name] > 1 else ""
    return ScoreValue(
        name=f"check.{check.name}{suffix}",
        value=1.0 if check.passed else 0.0,
        data_type="BOOLEAN",
        comment=check.detail if content else "",
    )


def _evaluation_event(score: ScoreValue, at: int, content: bool) -> SpanEvent:
    out: Attrs = (
        ("gen_ai.evaluation.name", score.name),
        ("gen_ai.evaluation.score.value", score.value),
    )
    if score.data_type == "BOOLEAN":
        out += (("gen_ai.evaluation.score.label", "pass" if score.value else "fail"),)
    if content and score.comment:
        out += (("gen_ai.evaluation.explanation", score.comment),)
    return SpanEvent(name=EVALUATION_EVENT, time_ns=at, attributes=out)
