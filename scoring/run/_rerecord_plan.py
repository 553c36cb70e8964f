"""The plan of a re-record: which attempts, from which turn, at what estimated cost.

``plan_attempts`` picks a replay run's STALE attempts (CHANGED ones only when
accepted) by case and model.  With ``--from-turn``, ``from_turns`` finds where
each stale session first changed: a replay run keeps, on its own tapes, every
request today's harness sent, and the cassette keeps the recorded ones; the
first turn whose request differs (compared as replay matches them: normalised
JSON, volatile headers ignored) is where the live run must start.  Every
earlier turn was asked the very same thing, so its recorded answer is a
sample from the same inputs and is served again (``Prefix``); only the turns
from the first changed one on are sent, estimated and counted against the
budget.  ``planned_for`` estimates each case and model from the recorded
tokens of what will be sent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.recorder import Mode, RecordedSession, Session, TapeError, TapeReader, Turn, fold
from evaltape.replay._shared import normalize

from .._config import Config, display_path
from ..cases._cases import Case
from ..cost._costs import cost_of_session, cost_of_turns, judge_cost_of_session
from ..cost._pricing import Prices
from ..results._records import AttemptResult, RunRecord
from ..verdicts._replaycheck import Change
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


WHY_NOT_CHANGED = (
    "re-recording would record the changed behaviour as correct; fix the harness, or pass "
    "--accept-harness-changes if the change is intended"
)


@attrs.frozen(kw_only=True)
class Planned:
    """The attempts of one case and model to record again."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model, as recorded."""
    attempts: tuple[int, ...]
    """The attempt indices, as recorded."""
    change: Change
    """STALE, or CHANGED (accepted)."""
    cost: float | None
    """USD the recorded sessions of these attempts cost (from the first changed turn on,
    with ``from_turn``); None when a price is unknown."""
    from_turns: tuple[int, ...] = ()
    """With ``from_turn``: per attempt, the 1-based turn it goes live from; () otherwise."""


def usd(value: float | None) -> str:
    """``$0.0123``, or ``n/a`` for an unknown cost."""
    return "n/a" if value is None else f"${value:.4f}"


def recorded_cost(
    config: Config, prices: Prices, case: Case, model: str, attempts: tuple[int, ...]
) -> float | None:
    """What the newest recorded session of each attempt cost (0 when there is none)."""
    tape, _ = cassette_tape(config.cassettes, case)
    newest: dict[int, float | None] = {}
    if tape.exists():
        for recorded in TapeReader(tape, strict=False).sessions():
            h = recorded.header
            if h.mode is Mode.LIVE and h.model == model and h.attempt in attempts:
                session = fold(recorded.events)
                agent = cost_of_session(prices, model, session).cost
                judge = judge_cost_of_session(prices, session).cost
                newest[h.attempt] = None if agent is None or judge is None else agent + judge
    costs = [newest.get(a, 0.0) for a in attempts]
    return None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)


def planned_for(
    config: Config,
    prices: Prices,
    case: Case,
    model: str,
    attempts: tuple[int, ...],
    change: Change,
    starts: Mapping[AttemptKey, FromTurn],
) -> Planned:
    """The attempts of one case and model, estimated from their recorded tokens: all of
    them, or with ``--from-turn`` those of the turns from the first changed one on."""
    if not starts:
        cost = recorded_cost(config, prices, case, model, attempts)
        return Planned(
            suite=case.suite, case_id=case.id, model=model, attempts=attempts, change=change,
            cost=cost,
        )  # fmt: skip
    costs: list[float | None] = []
    for a in attempts:
        start = starts[(case.id, model, a)]
        agent = cost_of_turns(prices, model, start.live_turns).cost
        judge = judge_cost_of_session(prices, start.recorded).cost
        costs.append(None if agent is None or judge is None else agent + judge)
    return Planned(
        suite=case.suite, case_id=case.id, model=model, attempts=attempts, change=change,
        cost=None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
        from_turns=tuple(starts[(case.id, model, a)].turn for a in attempts),
    )  # fmt: skip


def plan_attempts(
    record: RunRecord, cases: Mapping[str, Case], accept: bool
) -> tuple[dict[tuple[str, str], set[int]], dict[tuple[str, str], Change]]:
    keys: dict[tuple[str, str], set[int]] = defaultdict(set)
    change: dict[tuple[str, str], Change] = {}
    refused: list[str] = []
    for a in record.attempts:
        if a.case_id not in cases or a.change not in (Change.STALE.value, Change.CHANGED.value):
            continue
        if a.change == Change.CHANGED.value and not accept:
            refused.append(f"{a.case_id} {a.model} (attempt {a.attempt + 1})")
            continue
        keys[(a.case_id, a.model)].add(a.attempt)
        if change.get((a.case_id, a.model)) is not Change.CHANGED:
            change[(a.case_id, a.model)] = Change(a.change)
    if refused:
        raise RunRefused(
            f"{len(refused)} attempt(s) CHANGED (a tool result or the conversation): "
            f"{', '.join(refused)}; {WHY_NOT_CHANGED}"
        )
    return keys, change
