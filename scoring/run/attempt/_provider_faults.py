"""Whether an attempt's last model call got an answer no agent could use.

A provider that answers 200 with a body cut short, a body that is not JSON,
an error object instead of a completion, or a stream that ends before its
terminal event has failed, whatever the agent did next: the attempt is
infrastructure's failure (tainted), not the agent's.  The adapters already
say what is wrong with a call (``decode_call(...).error``); a problem of the
request body is the agent's own and is left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaltape.recorder import Event, Exchange, decode_call


def provider_fault(events: Sequence[Event]) -> str:
    """Why the last model call's 2xx answer was unusable, or "" when it was usable."""
    exchanges = [e for e in events if isinstance(e, Exchange)]
    last = exchanges[-1] if exchanges else None
    if last is None or last.response is None or last.error is not None:
        return ""
    if not 200 <= last.response.status < 300:
        return ""
    call = decode_call(last)
    if call is None or not call.error or "request body" in call.error:
        return ""
    return f"the provider answered HTTP {last.response.status} with an unusable body: {call.error}"
