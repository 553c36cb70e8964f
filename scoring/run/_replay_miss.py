"""What a replay job learns from its transport once the agent stopped: the first miss,
classified, and the base URL the session was recorded with."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from evaltape.recorder import Exchange, RecordedSession, Status
from evaltape.replay import ReplayError, ReplayTransport
from evaltape.scoring.run._jobs import JobEnv
from evaltape.scoring.verdicts._harness_change import harness_change
from evaltape.scoring.verdicts._replaycheck import HarnessChange

ENDPOINTS = ("/chat/completions", "/responses", "/messages", "/completions", "/embeddings")
"""API paths a base URL is followed by; what precedes one is the base URL's path."""

BASE_URL_KEY = "base_url"
"""The session metadata key a live attempt records its base URL under."""


def replay_miss(replayer: ReplayTransport | None, status: Status) -> HarnessChange | None:
    """The replay's first miss, classified by what the harness changed; None if it had none.

    Strict: the first error raised to the agent (or recorded calls left unused).
    Lenient (``--assume-same-model``): the first request served although it changed.
    A cancelled attempt has no verdict, so no miss either.
    """
    if replayer is None or status is Status.INTERRUPTED:
        return None
    try:
        replayer.finish()
    except ReplayError as exc:
        first = replayer.unmatched[0] if replayer.unmatched else None
        return harness_change(exc, first)
    if replayer.unmatched and replayer.divergences:
        return harness_change(None, replayer.unmatched[0], replayer.divergences[0].message)
    return None


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
