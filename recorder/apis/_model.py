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
from typing import Any, Literal, TypeAlias, get_args

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

_Setter = Callable[[Any, Any], None]


def _setters(cls: type, names: tuple[str, ...], builder: str) -> tuple[_Setter, ...]:
    """The slot setters of the attrs class ``cls``, whose fields must be ``names`` in
    order: ``builder`` builds its values slot by slot and must set each of them."""
    if tuple(a.name for a in attrs.fields(cls)) != names:
        raise RuntimeError(f"{cls.__name__}'s fields changed: {builder}() must set each")
    return tuple(cls.__dict__[name].__set__ for name in names)


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


@attrs.frozen(kw_only=True)
class ModelCall:
    """One request to a model API and what came back, decoded."""

    api: Api
    """Which API the call spoke."""
    model_requested: str = ""
    """The ``model`` field of the request."""
    model_responded: str = ""
    """The model the response names (often a dated snapshot of the requested one)."""
    input_messages: tuple[Message, ...] = ()
    """The conversation the request sent, system prompt and tool results included."""
    tools_offered: tuple[str, ...] = ()
    """Names of the tools the request offered, in request order."""
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
    _request: Callable[[ModelCall], None] | None = attrs.field(
        default=None, init=False, eq=False, hash=False, repr=False
    )
    """For a call a fold decoded before its request side was asked for: what fills
    ``model_requested``, ``input_messages`` and ``tools_offered`` (``CallDecoder``);
    None once they are filled.  Last, so whatever reads every field reads them first."""

    def __getattr__(self, name: str) -> object:
        # Only reached when a slot is unset: the request side of a folded call.
        fill = object.__getattribute__(self, "_request") if name in REQUEST_SIDE else None
        if fill is None:
            raise AttributeError(name)
        fill(self)
        return object.__getattribute__(self, name)


_BLANK: dict[str, ModelCall] = {api: ModelCall(api=api) for api in get_args(Api)}
"""The call of each API holding nothing else, made once at import."""


def blank(api: Api) -> ModelCall:
    """The call of ``api`` holding nothing else, which the adapters start from (one
    shared value: ``answered`` builds on it, and nothing may change it)."""
    return _BLANK[api]


(
    _SET_API,
    _SET_MODEL_REQUESTED,
    _SET_MODEL_RESPONDED,
    _SET_INPUT,
    _SET_TOOLS,
    _SET_OUTPUT,
    _SET_THINKING,
    _SET_CALLS,
    _SET_FINISH,
    _SET_ID,
    _SET_USAGE,
    _SET_STREAMED,
    _SET_STATUS,
    _SET_ERROR,
    _SET_PENDING,
) = _setters(
    ModelCall,
    (
        "api",
        "model_requested",
        "model_responded",
        "input_messages",
        "tools_offered",
        "output_text",
        "thinking",
        "tool_calls",
        "finish_reason",
        "response_id",
        "usage",
        "streamed",
        "status",
        "error",
        "_request",
    ),
    "answered",
)


def answered(
    call: ModelCall,
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
    """``call`` with what a response says (``attrs.evolve``); a ``blank`` call's is
    built slot by slot, as ``ModelCall(api=..., **fields)`` would build it (a fold makes
    one a response, and the generated ``__init__`` costs twice as much)."""
    if call is not _BLANK.get(call.api):
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
    built: ModelCall = object.__new__(ModelCall)
    _SET_API(built, call.api)
    _SET_MODEL_REQUESTED(built, "")
    _SET_MODEL_RESPONDED(built, model_responded)
    _SET_INPUT(built, ())
    _SET_TOOLS(built, ())
    _SET_OUTPUT(built, output_text)
    _SET_THINKING(built, thinking)
    _SET_CALLS(built, tool_calls)
    _SET_FINISH(built, finish_reason)
    _SET_ID(built, response_id)
    _SET_USAGE(built, usage)
    _SET_STREAMED(built, False)
    _SET_STATUS(built, None)
    _SET_ERROR(built, error)
    _SET_PENDING(built, None)
    return built


REQUEST_SIDE = frozenset({"model_requested", "input_messages", "tools_offered"})
"""The fields of a call that only its request says."""
_REQUEST_DELETERS = tuple(ModelCall.__dict__[name].__delete__ for name in sorted(REQUEST_SIDE))


def request_pending(
    call: ModelCall,
    fill: Callable[[ModelCall], None],
    *,
    status: int | None,
    streamed: bool,
    error: str,
) -> ModelCall:
    """``call``, a value built from a response alone that nothing else holds yet, given
    the exchange's ``status``, ``streamed`` and ``error`` and its request side left to
    ``fill``, which is called with the call the first time one of those fields is read
    and must set them with ``set_request``."""
    _SET_STATUS(call, status)
    _SET_STREAMED(call, streamed)
    _SET_ERROR(call, error)
    for delete in _REQUEST_DELETERS:
        delete(call)
    _SET_PENDING(call, fill)
    return call


def set_request(
    call: ModelCall, model: str, messages: tuple[Message, ...], tools: tuple[str, ...]
) -> None:
    """Fill the request side of a call ``request_pending`` made."""
    _SET_MODEL_REQUESTED(call, model)
    _SET_INPUT(call, messages)
    _SET_TOOLS(call, tools)
    _SET_PENDING(call, None)
