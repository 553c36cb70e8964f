"""Record modes: when to call the real API and when to serve the tape.

One closed enum and one resolver.  The resolver is the only place that turns
a mode (or its name, from a flag or a config file) plus the state of the
tape into what a session does.
"""

from __future__ import annotations

import enum

from ._errors import NoRecording, UnknownMode


class RecordMode(enum.Enum):
    """How a session treats the network."""

    NONE = "none"
    """Replay only; never call the API.  A session missing from the tape is
    an error.  The CI default: a replay run can never spend a token."""
    ONCE = "once"
    """Record the session live if the tape has no session for its key,
    otherwise replay it strictly.  For writing a new test case."""
    NEW_EPISODES = "new_episodes"
    """Replay the requests that match the tape and send the rest live,
    recording the whole session (replayed and live exchanges) as a new
    session.  For extending a recording after the harness grew a step."""
    ALL = "all"
    """Always call the API and record a new session, ignoring the tape.
    For refreshing stale recordings before a release."""


class Action(enum.Enum):
    """What a session does, as decided by ``resolve_mode``."""

    REPLAY = "replay"
    """Serve the recorded session; open no socket."""
    RECORD = "record"
    """Call the real API and record a new session."""
    REPLAY_THEN_RECORD = "replay_then_record"
    """Serve what matches the recorded session, call the API for the rest,
    and record everything into a new session."""


def parse_mode(mode: RecordMode | str) -> RecordMode:
    """``mode`` as a RecordMode; names are case-insensitive, ``-`` equals ``_``."""
    if isinstance(mode, RecordMode):
        return mode
    name = mode.strip().lower().replace("-", "_")
    for member in RecordMode:
        if member.value == name:
            return member
    valid = ", ".join(m.value for m in RecordMode)
    raise UnknownMode(f"unknown record mode {mode!r}; valid modes: {valid}")


def resolve_mode(mode: RecordMode | str, *, recorded: bool, key: str = "") -> Action:
    """Decide what one session does.

    ``recorded`` says whether the tape holds a session for this session's
    key (case, attempt, model...); ``key`` names it in error messages.
    Raises ``UnknownMode`` for a bad name and ``NoRecording`` for mode NONE
    without a recording, before anything is sent.
    """
    member = parse_mode(mode)
    if member is RecordMode.ALL:
        return Action.RECORD
    if member is RecordMode.ONCE:
        return Action.REPLAY if recorded else Action.RECORD
    if member is RecordMode.NEW_EPISODES:
        return Action.REPLAY_THEN_RECORD if recorded else Action.RECORD
    if not recorded:
        what = f"session {key}" if key else "this session"
        raise NoRecording(
            f"the tape has no recording of {what} and record mode 'none' never calls the API; "
            "record it with mode 'once' (or 'all')"
        )
    return Action.REPLAY
