"""Where a rescore's sessions are scored: in this process, or in batches elsewhere.

``rescore_run`` and ``rescore_tapes`` read the tapes and hand each session to a
``Rescorer`` with a callback; the in-process rescorer scores it at once, the
Ray rescorer (``_ray_rescore``) sends sessions in batches, so scheduling one
task costs far less than the sessions it scores.  Callbacks are called in the
order the sessions were added, so a rescore's results keep tape order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from evaltape.recorder import RecordedSession, fold

from ...cases._cases import Case
from ...checks._score import Scorer
from ...judge._judgement import DEFAULT_FLOORS, Floors
from ...results._records import AttemptResult
from ._rescore import Rescored, rescore_session


@attrs.frozen(kw_only=True)
class RescoreItem:
    """One recorded session to score again, with what its result needs."""

    case: Case
    """Today's case."""
    recorded: RecordedSession
    """The recorded session (complete)."""
    tape: str
    """The tape, as the run record names it."""
    before: AttemptResult | None = None
    """The attempt's earlier result, if known."""


def rescore_items(
    items: Sequence[RescoreItem], scorer: Scorer, floors: Floors = DEFAULT_FLOORS
) -> list[Rescored]:
    """Fold and score each item (``rescore_session``), in order."""
    return [
        rescore_session(
            item.case,
            fold(item.recorded.events),
            scorer,
            tape=item.tape,
            before=item.before,
            floors=floors,
        )
        for item in items
    ]


class Rescorer(Protocol):
    """Scores recorded sessions, now or later, calling back in the order they came."""

    def add(self, item: RescoreItem, done: Callable[[Rescored], None]) -> None:
        """Score ``item``; ``done`` gets its result (perhaps only at a later ``add`` or
        ``flush``)."""

    def flush(self) -> None:
        """Wait for every item added; every callback has been called when it returns."""


class InProcess:
    """Scores each session at once, in this thread (the default)."""

    def __init__(self, scorer: Scorer, floors: Floors = DEFAULT_FLOORS) -> None:
        self.scorer = scorer
        self.floors = floors

    def add(self, item: RescoreItem, done: Callable[[Rescored], None]) -> None:
        """Score ``item`` now."""
        done(rescore_items((item,), self.scorer, self.floors)[0])

    def flush(self) -> None:
        """Nothing is pending."""


RescorerFactory = Callable[[Scorer, Floors], Rescorer]
"""Makes a rescore's rescorer from its scorer and judge floors."""
