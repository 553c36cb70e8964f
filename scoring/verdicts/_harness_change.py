"""Replay misses, classified: did the harness do something else, or only say something else?

``evaltape.replay.classify`` compares each request the harness sent with the
recorded request that came closest.  A changed tool result (or a text agent's
observation) or a rebuilt conversation means the harness now *does* something
else (``CHANGED``); only changed harness text (prompts, tool definitions,
parameters) means the recording is stale (``STALE``).  A harness that asks the
model more often than recorded, stops before the recorded calls ran out, or
raises where the recording did not, has changed the conversation too.

A session is classified as a whole: every request that missed contributes
every change it carries, and ``session_changes`` returns them all, one per
distinct edit, the most serious first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from evaltape.replay import (
    ChangeKind,
    Diverged,
    Exhausted,
    Finding,
    NoRecording,
    ReplayError,
    Unmatched,
    UnusedRecordings,
    api_of,
    classify,
)

from ._replaycheck import Change, HarnessChange

_CHANGE = {
    ChangeKind.TOOL_RESULT: Change.CHANGED,
    ChangeKind.CONVERSATION: Change.CHANGED,
    ChangeKind.HARNESS_TEXT: Change.STALE,
}
_NUMBERS = re.compile(r"\d+")


def _conversation(summary: str, detail: str, key: str = "") -> HarnessChange:
    return HarnessChange(
        change=Change.CHANGED,
        what="conversation",
        label="conversation changed",
        summary=f"conversation changed: {summary}",
        edit_key=key or summary,
        detail=detail,
    )


def stopped_early(served: int, recorded: int, error: str = "") -> HarnessChange:
    """The harness stopped after ``served`` of ``recorded`` model calls (``error``: why)."""
    first = error.strip().splitlines()[0] if error.strip() else ""
    verb = "raised" if first and served >= recorded else "stopped"
    summary = f"the harness {verb} after call {served} of {recorded}" + (
        f": {first}" if first else ""
    )
    # One edit whatever the counts: the same crash in many attempts is one group.
    key = "stopped\0" + _NUMBERS.sub("#", first)
    return _conversation(summary, first, key)


def _from_finding(finding: Finding, detail: str) -> HarnessChange:
    if finding.kind is ChangeKind.TOOL_RESULT:
        what = "tool result"
        label = f"tool result changed: {finding.tool or finding.aspect}"
    elif finding.kind is ChangeKind.CONVERSATION:
        what, label = "conversation", finding.kind.value
    else:
        what, label = finding.aspect, finding.headline
    return HarnessChange(
        change=_CHANGE[finding.kind],
        what=what,
        label=label,
        summary=finding.headline,
        edit_key=finding.edit_key,
        diff=finding.diff,
        path=finding.path,
        detail=detail,
    )


def request_changes(
    error: ReplayError | Exception | None, unmatched: Unmatched | None, detail: str = ""
) -> tuple[HarnessChange, ...]:
    """Every change one missed request carries, from its error and the request it sent."""
    detail = detail or str(error)
    if isinstance(error, UnusedRecordings):
        n = len(error.unused)
        calls = "call was" if n == 1 else "calls were"
        return (_conversation(f"{n} recorded model {calls} never requested", detail),)
    if isinstance(error, Exhausted):
        return (_conversation("the harness asked the model more often than recorded", detail),)
    if isinstance(error, NoRecording):
        what = "the harness called an endpoint the recording never used"
        return (_conversation(what, detail),)
    nearest = unmatched.nearest if unmatched is not None else None
    if unmatched is None or nearest is None:
        return (
            HarnessChange(
                change=Change.STALE, what="request", label="request changed", summary=detail,
                edit_key=detail, detail=detail,
            ),
        )  # fmt: skip
    api = api_of(urlsplit(unmatched.request.url).path)
    found = classify(api, nearest.request.body, unmatched.request.body)
    if found.primary is None or not found.findings:
        # Same body: the method, path, query or a header differs.
        where = error.path if isinstance(error, Diverged) else "the request line or headers"
        return (
            HarnessChange(
                change=Change.STALE,
                what="request",
                label=f"request changed: {where}",
                summary=detail,
                edit_key=f"{where}\0{detail}",
                detail=detail,
            ),
        )
    return tuple(_from_finding(f, detail) for f in found.findings)


def _rank(h: HarnessChange) -> tuple[int, int]:
    kind = 0 if h.change is Change.CHANGED else 1
    return (kind, 0 if h.what == "tool result" else 1)


def session_changes(found: Iterable[HarnessChange]) -> tuple[HarnessChange, ...]:
    """Each distinct change of a session once, the most serious first (tool results, then
    conversations, then stale text), in the order they were found within a kind."""
    seen: dict[tuple[Change, str, str], HarnessChange] = {}
    for h in found:
        seen.setdefault((h.change, h.label, h.edit_key), h)
    return tuple(sorted(seen.values(), key=_rank))
