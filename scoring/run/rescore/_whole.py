"""Whole tapes scored where they are sent: the reading process reads none of their frames.

A process pool or Ray can take a tape whole (``WholeTape``): its path, and on
Ray its bytes, with which of its sessions to score.  Where it lands the tape
is read by the same code the reading process uses (``read_tape``), each
session decoded, folded and scored at once, and what happened comes back as a
``TapeRead``: the reader's notes, and in tape order each session skipped (its
line) or scored, with the run id its start names.  The reading process replays
that (``land_tape``) into the same lines, notes, results and budget checks, in
the same order, as reading the tape itself would give; it only looks up the
earlier verdicts, in the run records it can read.  A tape sent whole costs the
reading process a ``stat`` (and on Ray a read of its bytes), not a pass over
its frames and a message per session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

from evaltape.recorder import Mode
from evaltape.recorder._shared import OverBudget, PackedSession

from ...cases._cases import Case
from ...checks._score import Scorer
from ...judge._judgement import Floors
from ._exec import Landed, RescoreItem, rescore_items
from ._rescore import stream_packed

WHOLE_TAPE_BYTES = 16 << 20
"""Largest tape sent whole; a larger one is read here and its sessions sent in batches,
so a batch in flight never holds more than this many bytes of one tape."""

SESSION_GUESS = 16 << 10
"""Bytes a tape sent whole counts as one session, for the size of a batch."""


@attrs.frozen(kw_only=True)
class TapeCases:
    """What choosing a tape's sessions needs: today's cases, and which of them are selected."""

    cases: Mapping[str, Case]
    """Today's cases by id (rubrics included)."""
    selected: frozenset[str]
    """The ids of the cases to rescore."""


@attrs.frozen(kw_only=True)
class WholeTape:
    """One tape to read and score where it is sent."""

    path: Path
    """The tape as the rescore names it (lines and notes name it so)."""
    label: str
    """The tape as a run record names it."""
    wanted: frozenset[str] | None
    """The ids of the sessions to score; None: every one."""
    size: int
    """Its bytes when it was sent."""
    data: bytes | None = attrs.field(default=None, repr=False, eq=False)
    """Its bytes, when it goes where its path does not reach; None: read ``path`` there."""

    @property
    def weight(self) -> int:
        """How many sessions it counts as in a batch."""
        return max(1, self.size // SESSION_GUESS)


Step = tuple[int, str, Landed | None, object]
"""One session of a tape read whole: how many of the reader's notes came before it, then
its skip line and None, or the session's name (``what``), how scoring it landed and the
run id its start names."""


@attrs.frozen(kw_only=True)
class TapeRead:
    """What reading and scoring a whole tape gave, to be replayed where it was sent from."""

    notes: tuple[str, ...]
    """The reader's notes (and, last, why the tape could not be read), in order."""
    steps: tuple[Step, ...]
    """Each session of the tape the rescore concerns, in tape order."""
    over: str = ""
    """The tape decodes to more than a rescore reads (``OverBudget``), if it does."""


def run_id_of(packed: PackedSession) -> object:
    """The run id ``packed``'s start names in its metadata (any value; None if none): what
    finds the verdict the session got when it ran."""
    return dict(packed.header.metadata).get("run_id")


def read_tape(
    tape: Path,
    cases: Mapping[str, Case],
    selected: Callable[[str], bool],
    wanted: Callable[[str], bool],
    notes: list[str],
    skip: Callable[[str], None],
    score: Callable[[PackedSession, Case, str], None],
    data: bytes | None = None,
) -> None:
    """Read ``tape`` (or ``data``, its bytes): each ``wanted`` live session goes to ``skip``
    with a line (no end, its case gone) or to ``score`` (its case is ``selected``); notes
    and why the tape cannot be read go to ``notes``."""

    def each(packed: PackedSession) -> None:
        header = packed.header
        if header.mode is not Mode.LIVE:
            return
        what = f"{tape}: session {packed.session_id} ({header.case_id})"
        case = cases.get(header.case_id)
        if not packed.ended or packed.broken:
            skip(f"{what} has no end; skipped")
        elif case is None:
            skip(f"{what}: the case no longer exists; skipped")
        elif selected(case.id):
            score(packed, case, what)

    problem = stream_packed(tape, each, notes, wanted=wanted, data=data)
    if problem:
        notes.append(problem)


def score_tape(tape: WholeTape, cases: TapeCases, scorer: Scorer, floors: Floors) -> TapeRead:
    """Read ``tape`` and score its sessions here, one at a time (``read_tape``)."""
    notes: list[str] = []
    steps: list[Step] = []

    def skip(line: str) -> None:
        steps.append((len(notes), line, None, None))

    def score(packed: PackedSession, case: Case, what: str) -> None:
        item = RescoreItem(case=case, packed=packed, tape=tape.label)
        landed = rescore_items((item,), scorer, floors)[0]
        steps.append((len(notes), what, landed, run_id_of(packed)))

    wanted = (lambda sid: True) if tape.wanted is None else tape.wanted.__contains__
    try:
        read_tape(
            tape.path,
            cases.cases,
            cases.selected.__contains__,
            wanted,
            notes,
            skip,
            score,
            data=tape.data,
        )
    except OverBudget as exc:
        return TapeRead(notes=tuple(notes), steps=tuple(steps), over=str(exc))
    return TapeRead(notes=tuple(notes), steps=tuple(steps))


def land_tape(
    read: TapeRead,
    notes: list[str],
    skip: Callable[[str], None],
    landed: Callable[[str, Landed, object], None],
) -> None:
    """Replay ``read`` as reading its tape here would have gone: notes, skips and scored
    sessions (``landed`` with the session's name and run id) in their order; then
    ``OverBudget`` if the tape was refused."""
    flushed = 0
    for mark, text, outcome, run_id in read.steps:
        notes.extend(read.notes[flushed:mark])
        flushed = mark
        if outcome is None:
            skip(text)
        else:
            landed(text, outcome, run_id)
    notes.extend(read.notes[flushed:])
    if read.over:
        raise OverBudget(read.over)


Unit = RescoreItem | WholeTape
"""What a batch carries: one session, or a whole tape."""


def score_units(
    units: Sequence[Unit], cases: TapeCases | None, scorer: Scorer, floors: Floors
) -> list[Landed | TapeRead]:
    """Score each unit here, in order: a session (``rescore_items``) or a whole tape
    (``score_tape``, which needs ``cases``)."""
    out: list[Landed | TapeRead] = []
    for unit in units:
        if isinstance(unit, WholeTape):
            if cases is None:
                raise ValueError("a whole tape was sent without today's cases")
            out.append(score_tape(unit, cases, scorer, floors))
        else:
            out.extend(rescore_items((unit,), scorer, floors))
    return out


@runtime_checkable
class TakesWholeTapes(Protocol):
    """A rescorer that can be sent whole tapes (``WholeTape``) beside single sessions."""

    whole_limit: int
    """The largest tape (bytes) it takes whole; a larger one's sessions go one by one."""

    def add_tape(self, tape: WholeTape, cases: TapeCases, done: Callable[[TapeRead], None]) -> None:
        """Score ``tape``'s sessions where this rescorer scores; ``done`` gets what that
        gave, in the order of everything added (``cases`` is the same for every tape)."""
