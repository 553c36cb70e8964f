"""A replay miss, classified: did the harness do something else, or only say something else?

``evaltape.replay.classify`` compares the request the harness sent with the
recorded request that came closest.  A changed tool result or a rebuilt
conversation means the harness now *does* something else (``CHANGED``); only
changed harness text (prompts, tool definitions, parameters) means the
recording is stale (``STALE``).  A harness that asks the model more often than
recorded, or stops before the recorded calls ran out, has changed the
conversation too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from evaltape.replay import (
    ChangeKind,
    Diverged,
    Exhausted,
    NoRecording,
    ReplayError,
    Unmatched,
    UnusedRecordings,
    api_of,
    classify,
)
from evaltape.scoring.verdicts._replaycheck import Change, HarnessChange

_CHANGE = {
    ChangeKind.TOOL_RESULT: Change.CHANGED,
    ChangeKind.CONVERSATION: Change.CHANGED,
    ChangeKind.HARNESS_TEXT: Change.STALE,
}


def _conversation(summary: str, detail: str) -> HarnessChange:
    return HarnessChange(
        change=Change.CHANGED,
        what="conversation",
        label="conversation changed",
        summary=f"conversation changed: {summary}",
        edit_key=summary,
        detail=detail,
    )


def harness_change(
    error: ReplayError | None, unmatched: Unmatched | None, detail: str = ""
) -> HarnessChange:
    """What the harness changed, from the replay's first miss and the request it sent.

    ``error`` is the miss as raised (None for a request a lenient replay served
    anyway, described by ``detail``).
    """
    detail = detail or str(error)
    if isinstance(error, UnusedRecordings):
        n = len(error.unused)
        calls = "call was" if n == 1 else "calls were"
        return _conversation(f"{n} recorded model {calls} never requested", detail)
    if isinstance(error, Exhausted):
        return _conversation("the harness asked the model more often than recorded", detail)
    if isinstance(error, NoRecording):
        return _conversation("the harness called an endpoint the recording never used", detail)
    nearest = unmatched.nearest if unmatched is not None else None
    if unmatched is None or nearest is None:
        return HarnessChange(
            change=Change.STALE, what="request", label="request changed", summary=detail,
            edit_key=detail, detail=detail,
        )  # fmt: skip
    api = api_of(urlsplit(unmatched.request.url).path)
    found = classify(api, nearest.request.body, unmatched.request.body)
    if found.primary is None or not found.findings:
        # Same body: the method, path, query or a header differs.
        where = error.path if isinstance(error, Diverged) else "the request line or headers"
        return HarnessChange(
            change=Change.STALE,
            what="request",
            label=f"request changed: {where}",
            summary=detail,
            edit_key=f"{where}\0{detail}",
            detail=detail,
        )
    first = found.findings[0]
    label = first.headline if first.kind is ChangeKind.HARNESS_TEXT else f"{first.kind.value}"
    if first.kind is ChangeKind.TOOL_RESULT:
        label = f"tool result changed: {first.tool}"
    return HarnessChange(
        change=_CHANGE[first.kind],
        what=first.aspect,
        label=label,
        summary=found.summary,
        edit_key=first.edit_key,
        diff=first.diff,
        path=first.path,
        detail=detail,
    )
