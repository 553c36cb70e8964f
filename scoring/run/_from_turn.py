"""Where a stale session first changed, for ``rerecord --from-turn``.

A replay run keeps, on its own tapes, every request today's harness sent;
the cassette keeps the recorded ones.  The first turn whose request differs
(compared as replay matches them: normalised JSON, volatile headers ignored)
is where the live run must start.  Every earlier turn was asked the very
same thing, so its recorded answer is a sample from the same inputs and is
served again (``Prefix``); only the turns from the first changed one on are
sent, estimated and counted against the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.recorder import Mode, RecordedSession, Session, TapeError, TapeReader, Turn, fold
from evaltape.replay._shared import normalize

from .._config import Config, display_path
from ..cases._cases import Case
from ..results._records import AttemptResult
from ._jobs import Prefix
from ._plan import AttemptKey, cassette_tape
from ._setup import RunRefused


@attrs.frozen(kw_only=True)
class FromTurn:
    """Where one stale attempt goes live, and the recorded session it starts from."""

    turn: int
    """The first changed turn, 1-based: turns before it are served from the recording."""
    recorded: Session
    """The recorded session, folded."""
    prefix: Prefix | None
    """The recorded turns to serve; None when the first turn changed (whole session)."""

    @property
    def live_turns(self) -> tuple[Turn, ...]:
        """The recorded turns from the first changed one on: what the estimate prices."""
        return self.recorded.turns[self.turn - 1 :]


def _key(turn: Turn) -> str:
    r = turn.exchange.request
    return normalize(r.method, r.url, r.headers, r.body).key


def first_changed_turn(replayed: Session, recorded: Session) -> int:
    """The 1-based turn whose request today's harness sent differently; a session whose
    requests all matched but that made more or fewer calls changed at the first missing one."""
    for n, (now, then) in enumerate(zip(replayed.turns, recorded.turns, strict=False), 1):
        if _key(now) != _key(then):
            return n
    return min(len(replayed.turns), len(recorded.turns)) + 1


def _session(tape: Path, session_id: str, what: str) -> RecordedSession:
    try:
        for recorded in TapeReader(tape, strict=False).sessions():
            if recorded.session_id == session_id:
                return recorded
    except (TapeError, OSError) as exc:
        raise RunRefused(f"{display_path(tape)}: cannot read {what}: {exc}") from exc
    raise RunRefused(
        f"{display_path(tape)}: {what} {session_id} is not there; --from-turn needs the "
        "replay's tapes and the cassette it replayed"
    )


def from_turns(
    config: Config, attempts: tuple[AttemptResult, ...], cases: Mapping[str, Case]
) -> dict[AttemptKey, FromTurn]:
    """For each stale attempt of a replay run, where it first changed.

    Raises ``RunRefused`` naming the tape when the replay's session or the
    recorded session it replayed cannot be found.
    """
    found: dict[AttemptKey, FromTurn] = {}
    for a in attempts:
        replay_tape = config.results / a.tape
        replayed = _session(replay_tape, a.session_id, "the replayed session")
        header = replayed.events[0]
        recorded_id = getattr(header, "replay_of", "")
        tape, _ = cassette_tape(config.cassettes, cases[a.case_id])
        recorded = _session(tape, recorded_id, "the recorded session")
        then = fold(recorded.events)
        if then.header.mode is not Mode.LIVE:
            raise RunRefused(f"{display_path(tape)}: session {recorded_id} is not a live session")
        turn = first_changed_turn(fold(replayed.events), then)
        prefix = None
        if turn > 1:
            prefix = Prefix(
                session_id=recorded_id,
                exchanges=tuple(t.exchange for t in then.turns[: turn - 1]),
                seed=then.header.seed,
            )
        found[(a.case_id, a.model, a.attempt)] = FromTurn(turn=turn, recorded=then, prefix=prefix)
    return found
