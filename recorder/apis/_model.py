"""What a recorded model call means: the values adapters decode exchanges into.

These are derived views, never stored: a better adapter re-derives them from
old tapes.  Every field holds what the API said, normalized only where the
three APIs disagree on shape (usage counts, tool results, system prompts).

``Usage`` and ``ToolCall``, of which a fold makes one a call, are frozen
``msgspec`` structs: equal, hashable and immutable as the attrs values are, and
built by their own constructor, in C, at a fraction of the cost
(``msgspec.structs.replace`` makes a changed copy).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

import attrs
import msgspec

Api: TypeAlias = Literal["openai.chat", "openai.responses", "anthropic.messages", "unknown"]
"""Which model API a call spoke."""


class Usage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Token counts of one call, or a sum of calls.

    ``input_tokens`` always includes cached input (OpenAI reports it that way;
    Anthropic's figure is normalized to match), so ``input_tokens -
    cache_read_tokens - cache_write_tokens`` is the uncached part.  Adding an
    unreported usage gives an unreported sum whose counts are a lower bound.

    ``reported_cost`` is the USD figure a provider put in the response (such
    as OpenRouter's ``usage.cost``), None when it gave none.  A sum keeps a
    reported cost only when both parts reported one: a reported cost plus an
    unknown one is not a reported cost.  The zero ``Usage()`` reports none,
    so a total built up from it has none either; price totals call by call
    (``scoring.cost_of_session``), never from a summed usage.
    """

    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Generated tokens, reasoning tokens included."""
    cache_read_tokens: int = 0
    """Input tokens served from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache."""
    reasoning_tokens: int = 0
    """Output tokens spent on hidden reasoning or thinking."""
    reported: bool = True
    """False when the API did not report usage (for a sum: some part did not)."""
    reported_cost: float | None = None
    """USD the provider reported for the call; None when it reported none."""

    @classmethod
    def unknown(cls) -> Usage:
        """Usage of a call whose response reported none."""
        return cls(reported=False)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            reported=self.reported and other.reported,
            reported_cost=(
                self.reported_cost + other.reported_cost
                if self.reported_cost is not None and other.reported_cost is not None
                else None
            ),
        )


NO_USAGE = Usage(reported=False)
"""``Usage.unknown()``, shared: a frozen value, so one serves every call that reported none."""


def reported_usage(
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int,
    cache_write_tokens: int,
    reasoning_tokens: int,
    reported_cost: float | None,
) -> Usage:
    """The ``Usage`` a response reported (``reported`` true)."""
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
        reasoning_tokens=reasoning_tokens,
        reported_cost=reported_cost,
    )


def total_usage(usages: list[Usage]) -> Usage:
    """``Usage()`` plus each of ``usages`` in turn, added up in one pass: the zero
    usage reports no cost, so neither does the total."""
    inputs = outputs = reads = writes = reasoning = 0
    reported = True
    for u in usages:
        inputs += u.input_tokens
        outputs += u.output_tokens
        reads += u.cache_read_tokens
        writes += u.cache_write_tokens
        reasoning += u.reasoning_tokens
        reported = reported and u.reported
    return Usage(
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        reasoning_tokens=reasoning,
        reported=reported,
    )


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A tool call the model asked for."""

    id: str
    """The call's id, which the tool result quotes back (OpenAI ``call_id``, Anthropic ``id``)."""
    name: str
    """Name of the tool."""
    arguments: str
    """Arguments as the model sent them: a JSON text, possibly invalid or cut short."""

    def parsed_arguments(self) -> object | None:
        """The decoded arguments, or None if they are not valid JSON."""
        try:
            value: object = json.loads(self.arguments)
        except (ValueError, RecursionError):
            return None
        return value


def tool_call(id: str, name: str, arguments: str) -> ToolCall:
    """``ToolCall(id=id, name=name, arguments=arguments)`` (the adapters make one a call
    a response asks for)."""
    return ToolCall(id=id, name=name, arguments=arguments)


@attrs.frozen(kw_only=True)
class Message:
    """One message of the conversation a request sent.

    Roles are the API's (``system``, ``developer``, ``user``, ``assistant``)
    plus ``tool`` for every tool result: OpenAI ``role: tool`` messages,
    Responses ``function_call_output`` items and Anthropic ``tool_result``
    blocks.  Anthropic's ``system`` parameter becomes a leading ``system``
    message, Responses ``instructions`` likewise.
    """

    role: str
    """Who speaks: system, developer, user, assistant or tool."""
    text: str = ""
    """The message's text parts joined by newlines; other parts (images, files) are left out."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls an assistant message carries."""
    tool_call_id: str = ""
    """For a tool result: the id of the call it answers."""
    name: str = ""
    """Optional participant or tool name the API carried with the message."""


Asked: TypeAlias = tuple[str, tuple[Message, ...], tuple[str, ...]]
"""What a call's request says: the model asked for, the conversation, the tools offered."""


class RequestSide:
    """The request side of a call (``Asked``), found when first asked for: a fold
    decodes each response as it goes and reads a request's conversation only for a
    scorer that asks (scoring a trajectory or an answer never does).  Found once,
    then kept; it pickles as what it found."""

    __slots__ = ("_find", "_found")

    def __init__(self, find: Callable[[], Asked]) -> None:
        """``find()`` gives the request side; it is called once, the first time it is read."""
        self._find: Callable[[], Asked] | None = find
        self._found: Asked | None = None

    @property
    def is_found(self) -> bool:
        """True once the request side has been found."""
        return self._found is not None

    def found(self) -> Asked:
        """The request side."""
        found = self._found
        if found is None:
            find = self._find
            if find is None:  # found by another thread since: ``_found`` is set first
                found = self._found
                assert found is not None
                return found
            found = self._found = find()
            self._find = None  # (what found it is not needed again)
        return found

    def __reduce__(self) -> tuple[Any, ...]:
        return (_known, self.found())


def _known(model: str, messages: tuple[Message, ...], tools: tuple[str, ...]) -> RequestSide:
    side = RequestSide(lambda: (model, messages, tools))
    side.found()
    return side


def _model_of(value: str | RequestSide) -> str:
    return value if isinstance(value, str) else value.found()[0]


def _messages_of(value: tuple[Message, ...] | RequestSide) -> tuple[Message, ...]:
    return value if isinstance(value, tuple) else value.found()[1]


def _tools_of(value: tuple[str, ...] | RequestSide) -> tuple[str, ...]:
    return value if isinstance(value, tuple) else value.found()[2]


@attrs.frozen(kw_only=True)
class ModelCall:
    """One request to a model API and what came back, decoded.

    ``model_requested``, ``input_messages`` and ``tools_offered`` are what the
    request says; each may be given as its value or as the call's ``RequestSide``
    (a fold's calls: found when first read).  Compared, hashed and pickled as the
    values."""

    api: Api
    """Which API the call spoke."""
    _model_requested: str | RequestSide = attrs.field(
        default="", alias="model_requested", eq=_model_of
    )
    """``model_requested``, or the request side that finds it."""
    model_responded: str = ""
    """The model the response names (often a dated snapshot of the requested one)."""
    _input_messages: tuple[Message, ...] | RequestSide = attrs.field(
        default=(), alias="input_messages", eq=_messages_of
    )
    """``input_messages``, or the request side that finds them."""
    _tools_offered: tuple[str, ...] | RequestSide = attrs.field(
        default=(), alias="tools_offered", eq=_tools_of
    )
    """``tools_offered``, or the request side that finds them."""
    output_text: str = ""
    """The text the model produced (refusals included)."""
    thinking: str = ""
    """Reasoning or thinking text the response exposed (summaries for OpenAI reasoning)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls the model asked for, in output order."""
    finish_reason: str = ""
    """Why generation stopped, as the API says it ("stop", "tool_calls", "end_turn", ...)."""
    response_id: str = ""
    """The response's id, if it had one."""
    usage: Usage = NO_USAGE
    """Token counts the response reported."""
    streamed: bool = False
    """True when the response was a server-sent event stream."""
    status: int | None = None
    """HTTP status code, None if no response arrived."""
    error: str = ""
    """Why the call failed (HTTP status >= 400, broken stream, bad body); empty if it did not."""

    @property
    def model_requested(self) -> str:
        """The ``model`` field of the request."""
        return _model_of(self._model_requested)

    @property
    def input_messages(self) -> tuple[Message, ...]:
        """The conversation the request sent, system prompt and tool results included."""
        return _messages_of(self._input_messages)

    @property
    def tools_offered(self) -> tuple[str, ...]:
        """Names of the tools the request offered, in request order."""
        return _tools_of(self._tools_offered)

    def __repr__(self) -> str:
        names = (str(a.alias) for a in attrs.fields(ModelCall))
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"ModelCall({shown})"


class CallStart(msgspec.Struct, frozen=True, kw_only=True):
    """What a call is known to be before its response is read: the API, the request
    side, and the response's status and streaming.  The adapters build the call once
    from it (``answered``)."""

    api: Api
    asked: RequestSide | None = None
    status: int | None = None
    streamed: bool = False


Calling: TypeAlias = CallStart | ModelCall
"""What the adapters build a call from: a start, or (decoding one response alone) a call."""


def blank(api: Api) -> CallStart:
    """The start of a call of ``api`` that knows nothing else yet."""
    return CallStart(api=api)


def answered(
    call: Calling,
    *,
    model_responded: str,
    response_id: str,
    output_text: str,
    thinking: str,
    tool_calls: tuple[ToolCall, ...],
    finish_reason: str,
    usage: Usage,
    error: str = "",
) -> ModelCall:
    """The call ``call`` starts, with what a response says: built once, by the
    constructor, from a ``CallStart`` (a fold makes one a response); a copy
    (``attrs.evolve``) of a ``ModelCall``."""
    if isinstance(call, ModelCall):
        return attrs.evolve(
            call,
            model_responded=model_responded,
            response_id=response_id,
            output_text=output_text,
            thinking=thinking,
            tool_calls=tool_calls,
            finish_reason=finish_reason,
            usage=usage,
            error=error,
        )
    asked = call.asked
    return ModelCall(
        api=call.api,
        model_requested="" if asked is None else asked,
        model_responded=model_responded,
        input_messages=() if asked is None else asked,
        tools_offered=() if asked is None else asked,
        output_text=output_text,
        thinking=thinking,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        response_id=response_id,
        usage=usage,
        streamed=call.streamed,
        status=call.status,
        error=error,
    )


def with_error(call: Calling, error: str) -> ModelCall:
    """The call ``call`` starts (or ``call``) failed with ``error``: nothing answered."""
    if isinstance(call, ModelCall):
        return attrs.evolve(call, error=error)
    return answered(
        call,
        model_responded="",
        response_id="",
        output_text="",
        thinking="",
        tool_calls=(),
        finish_reason="",
        usage=NO_USAGE,
        error=error,
    )
