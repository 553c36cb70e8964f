"""Where a rescore's sessions are scored: in this process, or in batches elsewhere.

``rescore_run`` and ``rescore_tapes`` read the tapes and hand each session to a
``Rescorer`` with a callback, still compressed (a ``PackedSession``: its
frames as the tape stores them), so the reading process never decodes a
session it sends away.  Whoever scores it decodes it (``unpack_session``),
folds it and scores it: the in-process rescorer at once, the process-pool
and Ray rescorers (``executors``) in batches, so scheduling one task costs
far less than the sessions it scores.  Callbacks are called in the order the
sessions were added, so a rescore's results keep tape order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from evaltape.recorder import fold
from evaltape.recorder._shared import PackedSession, TapeBudget, unpack_session
from evaltape.recorder.tape import Note

from ...cases._cases import Case
from ...checks._score import Scorer
from ...judge._judgement import DEFAULT_FLOORS, Floors
from ...results._records import AttemptResult
from ._rescore import Rescored, rescore_session

UNBOUNDED = 1 << 62
"""A budget that only counts: the tape's limit is checked where the tape is read."""


@attrs.frozen(kw_only=True)
class RescoreItem:
    """One recorded session to score again, with what its result needs."""

    case: Case
    """Today's case."""
    packed: PackedSession
    """The recorded session, still compressed (its end frame was read)."""
    tape: str
    """The tape, as the run record names it."""
    before: AttemptResult | None = None
    """The attempt's earlier result, if known."""


@attrs.frozen(kw_only=True)
class Landed:
    """What scoring one item gave: its result, or why the session could not be scored."""

    rescored: Rescored | None
    """The session scored again; None when it did not decode whole."""
    problem: str = ""
    """Why the session stops early (a corrupt event), when ``rescored`` is None."""
    notes: tuple[str, ...] = ()
    """What decoding it noted (skipped unknown events, corruption), one line each."""
    decoded: int = 0
    """Bytes the session decoded to (counted against its tape's budget by the reader)."""


def rescore_items(
    items: Sequence[RescoreItem], scorer: Scorer, floors: Floors = DEFAULT_FLOORS
) -> list[Landed]:
    """Decode, fold and score each item (``rescore_session``), in order."""
    out: list[Landed] = []
    for item in items:
        notes: list[str] = []

        def note(n: Note, notes: list[str] = notes) -> None:
            if n.kind != "incomplete":  # reported with the session it concerns
                notes.append(n.message)

        counted = TapeBudget(UNBOUNDED)
        recorded = unpack_session(item.packed, on_note=note, budget=counted)
        if not recorded.complete:
            problem = recorded.problem or "no end event"
            out.append(
                Landed(rescored=None, problem=problem, notes=tuple(notes), decoded=counted.used)
            )
            continue
        rescored = rescore_session(
            item.case,
            fold(recorded.events),
            scorer,
            tape=item.tape,
            before=item.before,
            floors=floors,
        )
        out.append(Landed(rescored=rescored, notes=tuple(notes), decoded=counted.used))
    return out


Done = Callable[[Landed], None]
"""Called with each item's outcome, in the order the items were added."""


class Rescorer(Protocol):
    """Scores recorded sessions, now or later, calling back in the order they came."""

    def add(self, item: RescoreItem, done: Done) -> None:
        """Score ``item``; ``done`` gets its outcome (perhaps only at a later ``add`` or
        ``flush``)."""

    def flush(self) -> None:
        """Wait for every item added; every callback has been called when it returns."""

    def close(self) -> None:
        """Stop: drop what is pending and release the workers (after ``flush`` or on an
        error)."""


class InProcess:
    """Scores each session at once, in this thread."""

    def __init__(self, scorer: Scorer, floors: Floors = DEFAULT_FLOORS) -> None:
        self.scorer = scorer
        self.floors = floors

    def add(self, item: RescoreItem, done: Done) -> None:
        """Score ``item`` now."""
        done(rescore_items((item,), self.scorer, self.floors)[0])

    def flush(self) -> None:
        """Nothing is pending."""

    def close(self) -> None:
        """Nothing to release."""


RescorerFactory = Callable[[Scorer, Floors], Rescorer]
"""Makes a rescore's rescorer from its scorer and judge floors."""
