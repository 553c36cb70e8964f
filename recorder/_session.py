"""The Session view: a pure fold over one session's events.

``fold(events)`` derives everything a scorer or a report needs (turns, tool
calls with their results, the final reply, usage totals, errors, the final
workspace) from the recorded facts alone, so a better adapter re-derives it
from old tapes.  Each exchange is decoded exactly once, and a conversation
message that later requests repeat is parsed and normalized only where it
first appears (``CallDecoder``), so the fold is linear in the turns.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from typing import Literal, TypeAlias

import attrs
import msgspec

from ._events import (
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    WorkspaceSnapshot,
)
from .apis import CallDecoder
from .apis._model import (
    Message,
    ModelCall,
    ToolCall,
    Usage,
    total_usage,
)

Origin: TypeAlias = Literal["model", "transport", "runner"]
"""Where a failure was seen."""

ROLE_HEADER = "x-evaltape-role"
"""Request header tagging a call made on the agent's tape by someone else; its value is the role."""


def role_of(exchange: Exchange) -> str | None:
    """The role the request is tagged with (``ROLE_HEADER``, trimmed, lower case), or None.

    Someone other than the agent (the runner, say) may make calls on the
    agent's tape and tag them with a role.  The recorder knows the tag only
    as a tag: the fold keeps tagged exchanges apart
    (``Session.tagged_exchanges``) so they are never counted as agent turns,
    tool calls, usage or model errors, and replay never serves them to the
    agent.  What a role means belongs to whoever made the call.
    """
    headers = exchange.request.headers
    if ROLE_HEADER not in map(_NAME, headers):  # the usual exchange, seen in C
        return None
    for name, value in headers:
        if name == ROLE_HEADER and value.strip():
            return value.strip().lower()
    return None


_NAME = operator.itemgetter(0)


class Turn(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One model call of the session (a frozen msgspec struct: ``msgspec.structs.replace``
    makes a changed copy)."""

    index: int
    """Zero-based position among the session's model calls."""
    exchange: Exchange
    """The recorded HTTP exchange."""
    call: ModelCall
    """What the exchange means as a model call."""


class ToolResult:
    """The result text a tool call got back, as a ``ToolCallRecord`` holds it: known when
    the record is made, or for a record a fold made, found in the session's requests the
    first time it is read (scoring tool calls by name and arguments never reads it).

    The record itself never changes; this holder keeps what it found.  It equals,
    hashes, prints and pickles as its text (or None) does.
    """

    __slots__ = ("_find", "_text")

    def __init__(
        self, text: str | None = None, find: Callable[[], str | None] | None = None
    ) -> None:
        self._text = text
        self._find = find

    @property
    def text(self) -> str | None:
        """The result's text; None if no later request carried one."""
        find = self._find
        if find is not None:  # two threads may both find it: the same text either way
            self._text = find()
            self._find = None
        return self._text

    @property
    def found(self) -> bool:
        """Whether the text is known (given, or found since)."""
        return self._find is None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return repr(self.text)

    def __reduce__(self) -> tuple[type[ToolResult], tuple[str | None]]:
        return ToolResult, (self.text,)


def _as_result(value: str | ToolResult | None) -> ToolResult:
    return value if isinstance(value, ToolResult) else ToolResult(value)


@attrs.frozen(kw_only=True, repr=False)
class ToolCallRecord:
    """A tool call the model made, and the result the agent sent back for it."""

    turn: int
    """Index of the turn whose response asked for the call."""
    call: ToolCall
    """The call."""
    _result: ToolResult = attrs.field(default=None, converter=_as_result, alias="result")
    """The result (``result``): given as its text (or None), or for a record a fold
    made, found in the requests when first read (``ToolResult``)."""

    @property
    def result(self) -> str | None:
        """Text of the tool result a later request carried for this call's id; None if none
        did."""
        return self._result.text

    def __repr__(self) -> str:
        return f"ToolCallRecord(turn={self.turn!r}, call={self.call!r}, result={self.result!r})"


@attrs.frozen(kw_only=True)
class Failure:
    """Something that went wrong during the session."""

    at: float
    """Seconds since the session started."""
    origin: Origin
    """"model" (HTTP error, broken stream, bad body), "transport" or "runner"."""
    message: str
    """One line saying what failed."""
    turn: int | None = None
    """The turn concerned, if any."""


@attrs.frozen(kw_only=True)
class Session:
    """Everything derived from one session's events."""

    header: SessionStarted
    """The session's start: case, attempt, model, mode."""
    end: SessionEnded | None
    """Its end, None if the tape stops before it."""
    turns: tuple[Turn, ...]
    """Model calls in order; other HTTP traffic is in ``other_exchanges``."""
    other_exchanges: tuple[Exchange, ...]
    """Exchanges that are not model API calls."""
    tool_calls: tuple[ToolCallRecord, ...]
    """Every tool call the model made, in order, with its result when one was sent back."""
    reply: str
    """The final assistant text: the last turn's output, "" without turns."""
    usage: Usage
    """Total over turns; ``reported`` is False if any turn's usage was not reported."""
    errors: tuple[Failure, ...]
    """Failed model calls, transport failures and runner timeouts / infra errors, in order."""
    harness: tuple[HarnessEvent, ...]
    """Events the agent logged."""
    workspace: tuple[FileEntry, ...]
    """Files of the last workspace snapshot, empty without one."""
    workspace_omitted: tuple[str, ...]
    """Paths the last workspace snapshot left out."""
    duration: float
    """Seconds from start to end (to the last event seen, if the session did not end)."""
    tagged_exchanges: tuple[Exchange, ...] = ()
    """Calls tagged with a role (``ROLE_HEADER``), in order; never turns, usage or errors."""
    workspace_redacted: tuple[str, ...] = ()
    """Paths of the last snapshot's files whose secrets were masked before recording."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.header.session_id


def _results(turns: list[Turn]) -> dict[str, tuple[int, str]]:
    """First tool result per call id, with the turn whose request carried it."""
    found: dict[str, tuple[int, str]] = {}
    seen: tuple[Message, ...] = ()
    for turn in turns:
        messages = turn.call.input_messages
        # A request that repeats the one before's messages (the very same values, as
        # the decoder hands them over) holds no first result among them.
        if len(messages) >= len(seen) and all(map(operator.is_, messages, seen)):
            new = messages[len(seen) :]
        else:
            new = messages
        for message in new:
            if message.role == "tool" and message.tool_call_id:
                found.setdefault(message.tool_call_id, (turn.index, message.text))
        seen = messages
    return found


class _Results:
    """Finds tool calls' results in a session's requests, reading them on first need."""

    def __init__(self, turns: list[Turn]) -> None:
        self._turns = turns
        self._found: dict[str, tuple[int, str]] | None = None

    def of(self, turn: int, call_id: str) -> str | None:
        """The result of call ``call_id`` (made in ``turn``) a later request carried."""
        if self._found is None:
            self._found = _results(self._turns)
        seen = self._found.get(call_id) if call_id else None
        return seen[1] if seen is not None and seen[0] > turn else None


def _tool_calls(turns: list[Turn]) -> tuple[ToolCallRecord, ...]:
    """Every tool call of the turns, each result left to be found when first read."""
    results = _Results(turns)
    return tuple(
        ToolCallRecord(
            turn=turn.index,
            call=call,
            result=ToolResult(find=functools.partial(results.of, turn.index, call.id)),
        )
        for turn in turns
        for call in turn.call.tool_calls
    )


class SessionFold:
    """The Session view of one session built event by event: each event is folded once,
    when it is added, and ``view`` gives the Session of the events so far.

    ``fold`` is this class run over a whole session.  A runner that scores an attempt
    before its session ends (so a judge's call lands on the attempt's own tape) adds
    each event as it is recorded and asks for a view twice, with the end the session
    would get now and with its real end, without decoding any exchange again.
    """

    def __init__(self, header: SessionStarted) -> None:
        self.header = header
        self._end: SessionEnded | None = None
        self._turns: list[Turn] = []
        self._others: list[Exchange] = []
        self._tagged: list[Exchange] = []
        self._errors: list[Failure] = []
        self._harness: list[HarnessEvent] = []
        self._snapshot: WorkspaceSnapshot | None = None
        self._last = 0.0
        self._decoder = CallDecoder()
        self.last_exchange: tuple[Exchange, ModelCall | None] | None = None
        """The last exchange added that is not tagged with a role, with its model call
        (None: not a model API call); None before the first."""

    def add(self, event: Event) -> None:
        """Fold in the next event.  Raises ``ValueError`` for a second SessionStarted."""
        if isinstance(event, Exchange):
            self._last = max(self._last, event.at + event.duration)
            if role_of(event) is not None:
                self._tagged.append(event)
                return
            turns = self._turns
            call = self._decoder.decode(event)
            self.last_exchange = (event, call)
            index = len(turns) if call is not None else None
            if call is not None:
                turns.append(Turn(index=len(turns), exchange=event, call=call))
            else:
                self._others.append(event)
            if event.error is not None:
                message = f"{event.error.type}: {event.error.message}"
                self._errors.append(
                    Failure(at=event.at, origin="transport", message=message, turn=index)
                )
            elif call is not None and call.error:
                self._errors.append(
                    Failure(at=event.at, origin="model", message=call.error, turn=index)
                )
            return
        if isinstance(event, SessionStarted):
            raise ValueError(f"session {self.header.session_id} starts twice")
        self._last = max(self._last, event.at)
        if isinstance(event, SessionEnded):
            self._end = event
        elif isinstance(event, HarnessEvent):
            self._harness.append(event)
        elif isinstance(event, RunnerFact):
            if event.fact in (FactKind.TIMEOUT, FactKind.INFRA_ERROR):
                message = event.fact.value + (f": {event.message}" if event.message else "")
                self._errors.append(Failure(at=event.at, origin="runner", message=message))
        else:
            self._snapshot = event

    def view(self, end: SessionEnded | None = None) -> Session:
        """The Session of the events added so far; with ``end``, as if it were the
        session's last event (the fold is not changed)."""
        end = self._end if end is None else end
        turns = list(self._turns)
        snapshot = self._snapshot
        errors = self._errors
        return Session(
            header=self.header,
            end=end,
            turns=tuple(turns),
            other_exchanges=tuple(self._others),
            tool_calls=_tool_calls(turns),
            reply=turns[-1].call.output_text if turns else "",
            usage=total_usage([turn.call.usage for turn in turns]),
            errors=tuple(errors),
            harness=tuple(self._harness),
            workspace=snapshot.files if snapshot is not None else (),
            workspace_omitted=snapshot.omitted if snapshot is not None else (),
            duration=end.at if end is not None else self._last,
            tagged_exchanges=tuple(self._tagged),
            workspace_redacted=snapshot.redacted if snapshot is not None else (),
        )


def fold(events: Iterable[Event]) -> Session:
    """Derive the Session view of one session's events (SessionStarted first).

    Pure: no clock, no files; the same events always give an equal Session.
    Raises ``ValueError`` if the events do not start with a SessionStarted.
    """
    it = iter(events)
    header = next(it, None)
    if not isinstance(header, SessionStarted):
        got = "nothing" if header is None else type(header).__name__
        raise ValueError(f"a session's events start with SessionStarted, not {got}")
    folding = SessionFold(header)
    add = folding.add
    for event in it:
        add(event)
    return folding.view()
