"""A streamed response's message, assembled once when it is recorded (``Assembled``).

Rescoring a streamed session used to parse every chunk of every response again;
now the recorder reads the stream once, with the same adapters the fold uses,
and keeps what they found beside the chunks.  The fold takes it instead of the
chunks when it was made by adapters that read streams as today's do
(``ASSEMBLY``), and parses the chunks otherwise, so a better adapter still
re-derives old tapes.
"""

from __future__ import annotations

from .._events import Assembled
from ._model import (
    NO_USAGE,
    Calling,
    ModelCall,
    answered,
    reported_usage,
    tool_call,
)

ASSEMBLY = 1
"""The version of the adapters' reading of streams; raise it whenever an adapter reads
a stream differently, so that messages assembled before are parsed again."""


def assembled_of(call: ModelCall) -> Assembled | None:
    """What a call decoded from a stream says, as stored; None for a usage that was not
    reported but holds counts (``Assembled`` keeps no such usage)."""
    usage = call.usage
    if usage == NO_USAGE:
        counts = None
    elif usage.reported:
        counts = (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
            usage.reported_cost,
        )
    else:
        return None
    return Assembled(
        version=ASSEMBLY,
        model=call.model_responded,
        response_id=call.response_id,
        output_text=call.output_text,
        thinking=call.thinking,
        finish_reason=call.finish_reason,
        tool_calls=tuple((c.id, c.name, c.arguments) for c in call.tool_calls),
        usage=counts,
        error=call.error,
    )


def call_of(assembled: Assembled, call: Calling) -> ModelCall:
    """The call ``call`` starts, with what ``assembled`` says: the call the adapters
    made of the stream when it was recorded."""
    counts = assembled.usage
    return answered(
        call,
        model_responded=assembled.model,
        response_id=assembled.response_id,
        output_text=assembled.output_text,
        thinking=assembled.thinking,
        tool_calls=tuple(tool_call(*c) for c in assembled.tool_calls),
        finish_reason=assembled.finish_reason,
        usage=NO_USAGE if counts is None else reported_usage(*counts),
        error=assembled.error,
    )
