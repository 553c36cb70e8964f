"""Whether a new live session may take a recorded one's place: only when it is as complete.

An outage must not wipe cassettes.  A *broken* session tells what the
provider or the wire did, not what the model answers: it was cancelled, it
ended in an infrastructure error, one of its model calls failed (an error
response such as a 5xx or 429 after the retries, a refused connection, a
stream cut short, an unusable body), or no model call was answered at all.
A broken session never goes into a cassette.  A session that ended in error
otherwise (the agent failed, the attempt timed out) replaces a recording
only when it got at least as many answered model calls as that recording.
"""

from __future__ import annotations

from evaltape.recorder import Session, Status, Turn


def _answered(turn: Turn) -> bool:
    status = turn.call.status
    return status is not None and 200 <= status < 300 and not turn.call.error


def answered_calls(session: Session) -> int:
    """How many of the session's model calls got a usable answer."""
    return sum(1 for turn in session.turns if _answered(turn))


def _failed_call(turn: Turn) -> str:
    error = turn.exchange.error
    if error is not None:
        return f"the model call failed: {error.type}: {error.message}"
    status = turn.call.status
    if status is not None and status >= 400:
        return f"the provider answered HTTP {status}"
    if turn.call.error:
        return f"the provider's answer was unusable: {turn.call.error}"
    return ""


def broken(session: Session) -> str:
    """Why ``session`` records the provider's or the run's failure rather than the model's
    answers ("" when it does not): the first failed model call, a cancelled or
    infrastructure end, an unfinished session, or no answered call."""
    end = session.end
    if end is None:
        return "the session has no end"
    if end.status is Status.INTERRUPTED:
        return f"the attempt was cancelled ({end.reason or 'interrupted'})"
    for turn in session.turns:
        why = _failed_call(turn)
        if why:
            return why
    if end.status is Status.INFRA_ERROR:
        return f"infrastructure error: {end.reason}"
    if not answered_calls(session):
        return "no model call was answered"
    return ""


def shortfall(new: Session, old: Session | None) -> str:
    """Why ``new`` may not replace ``old`` in a cassette ("" when it may): it is broken,
    or it ended in error with fewer answered model calls than ``old``."""
    why = broken(new)
    if why or old is None:
        return why
    assert new.end is not None  # broken() said it ended
    if new.end.status is Status.COMPLETED:
        return ""
    mine, theirs = answered_calls(new), answered_calls(old)
    if mine < theirs:
        return (
            f"it ended {new.end.status.value} after {mine} answered model call(s), "
            f"the recorded session has {theirs}"
        )
    return ""
