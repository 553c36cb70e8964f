"""What a replay job learns from its transport once the agent stopped: every miss of the
session, classified, and the base URL the session was recorded with."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from evaltape.recorder import Exchange, RecordedSession, SessionEnded, Status
from evaltape.replay import ReplayTransport

from ...verdicts._harness_change import (
    request_changes,
    session_changes,
    stopped_early,
)
from ...verdicts._replaycheck import HarnessChange
from .._jobs import JobEnv

ENDED_BADLY = frozenset({Status.FAILED, Status.INFRA_ERROR, Status.TIMEOUT})
"""Endings of a replay that say the harness did not run to its end."""

ENDPOINTS = ("/chat/completions", "/responses", "/messages", "/completions", "/embeddings")
"""API paths a base URL is followed by; what precedes one is the base URL's path."""

BASE_URL_KEY = "base_url"
"""The session metadata key a live attempt records its base URL under."""


_AGENT_ERROR = re.compile(r"(?:\(agent: |the agent failed: )([A-Za-z_][\w.]*)")


def _error_kind(reason: str) -> str:
    """The agent's exception type in an ending's reason (``the agent failed: KeyError: 'x'``,
    ``provider HTTP 500 after retries (agent: HTTPStatusError: ...)``), else the reason."""
    found = _AGENT_ERROR.search(reason)
    return found.group(1) if found else reason.strip().splitlines()[0] if reason.strip() else ""


def _same_end(recorded: RecordedSession, status: Status, reason: str) -> bool:
    """True when the recording ended in an error of the same kind (a provider's 500 served
    from the tape fails the agent as it did live)."""
    end = recorded.events[-1] if recorded.events else None
    if not isinstance(end, SessionEnded) or end.status not in ENDED_BADLY:
        return False
    if (end.status is Status.TIMEOUT) != (status is Status.TIMEOUT):
        return False
    return _error_kind(end.reason) == _error_kind(reason)


def replay_changes(
    replayer: ReplayTransport | None, status: Status, reason: str, recorded: RecordedSession
) -> tuple[HarnessChange, ...]:
    """Every change the replay found in the whole session, most serious first; () if none.

    Each request that missed is classified (every change it carries); a harness
    that left recorded calls unused, or ended in an error (raised, failed, timed out)
    the recording did not end with, stopped early: a conversation change naming the
    call it stopped after and the error's first line.  A cancelled attempt has no
    verdict, so no change either.
    """
    if replayer is None or status is Status.INTERRUPTED:
        return ()
    found: list[HarnessChange] = []
    for miss in replayer.unmatched:
        detail = str(miss.error) if miss.error is not None else ""
        found.extend(request_changes(miss.error, miss, detail))
    total = len(replayer.recorded)
    served = replayer.served
    crashed = status in ENDED_BADLY and not _same_end(recorded, status, reason)
    if served < total or crashed:
        found.append(stopped_early(served, total, reason if status in ENDED_BADLY else ""))
    return session_changes(found)


def nothing_to_replay(replayer: ReplayTransport | None) -> str:
    """Why a replay cannot test this attempt ("" when it can): its recording holds no
    model call, so whatever the harness does no answer of the model is replayed."""
    if replayer is None or replayer.recorded:
        return ""
    return "the recording holds no model call, so a replay cannot test the harness"


def recorded_base_url(recorded: RecordedSession, env: JobEnv) -> str:
    """The base URL the session was recorded with, so a custom path replays unchanged.

    The header's ``base_url`` metadata when present; else the first exchange's
    URL up to its API path; else the run's base URL.
    """
    for key, value in recorded.header.metadata:
        if key == BASE_URL_KEY and isinstance(value, str) and value:
            return value
    for event in recorded.events:
        if isinstance(event, Exchange):
            parts = urlsplit(event.request.url)
            for endpoint in ENDPOINTS:
                if parts.path.endswith(endpoint):
                    path = parts.path[: -len(endpoint)]
                    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
            break
    return env.base_url
