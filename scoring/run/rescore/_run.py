"""Rescoring one run record: each attempt's recorded session scored again, tape by tape.

Every tape is read once, streaming; each selected attempt's session is handed to
the rescorer (in this process, or in batches elsewhere) as soon as it is read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from evaltape.recorder._shared import PackedSession

from ...cases._cases import Case
from ...checks._score import Scorer
from ...judge._judgement import DEFAULT_FLOORS, Floors
from ...results._records import (
    AttemptResult,
    RunKind,
    RunRecord,
    Verdict,
)
from ._exec import InProcess, Landed, RescoreItem, Rescorer
from ._rescore import (
    Rescored,
    Skipped,
    TapeBudgets,
    TapesRescored,
    locate_tape,
    stream_packed,
)

Waiting = dict[str, list[tuple[int, AttemptResult, Case]]]
"""Per session id, the run's attempts (position, result, today's case) that point to it."""


def rescore_run(
    record: RunRecord,
    cases: Mapping[str, Case],
    scorer: Scorer,
    *,
    cassettes: Path,
    results: Path,
    selected: Callable[[str], bool] = lambda case_id: True,
    on_result: Callable[[Rescored], None] = lambda r: None,
    floors: Floors = DEFAULT_FLOORS,
    rescorer: Callable[[Scorer, Floors], Rescorer] | None = None,
) -> TapesRescored:
    """Rescore the sessions ``record``'s attempts point to, against their recorded verdicts.

    ``cases`` holds every case loaded today, by id; attempts whose case is not
    ``selected`` are left out silently, attempts whose case no longer exists or
    whose session cannot be found are skipped with a line saying why.  Each
    tape is read once, one session in memory at a time; results come in the
    record's order.  Judged cases reuse recorded verdicts against ``floors``
    (``rescore_session``); ``rescorer`` says where sessions are scored (default: here).
    """
    notes: list[str] = []
    outcomes: dict[int, Rescored | Skipped] = {}
    by_tape: dict[Path, Waiting] = {}

    def skip(i: int, attempt: AttemptResult, why: str) -> None:
        kept = attrs.evolve(
            attempt, verdict=Verdict.SKIPPED, reason=why, mode=RunKind.RESCORE, rescored=None
        )
        where = f"{attempt.suite}/{attempt.case_id} {attempt.model} (attempt {attempt.attempt + 1})"
        outcomes[i] = Skipped(line=f"{where}: {why}; skipped", attempt=kept)

    for i, attempt in enumerate(record.attempts):
        if not selected(attempt.case_id):
            continue
        case = cases.get(attempt.case_id)
        if case is None:
            skip(i, attempt, f'case "{attempt.case_id}" no longer exists')
        elif not attempt.tape or not attempt.session_id:
            skip(i, attempt, "the attempt recorded no session")
        else:
            path = locate_tape(attempt.tape, attempt.mode, cassettes=cassettes, results=results)
            by_tape.setdefault(path, {}).setdefault(attempt.session_id, []).append(
                (i, attempt, case)
            )
    scoring = rescorer(scorer, floors) if rescorer is not None else InProcess(scorer, floors)

    budgets = TapeBudgets()

    def landed(path: Path, i: int, attempt: AttemptResult, where: str, outcome: Landed) -> None:
        budgets.charge(path, outcome.decoded)
        notes.extend(outcome.notes)
        if outcome.rescored is None:
            skip(i, attempt, f"{where} has no end ({outcome.problem})")
        else:
            outcomes[i] = outcome.rescored
            on_result(outcome.rescored)

    try:
        for path, sessions in by_tape.items():

            def each(
                packed: PackedSession, path: Path = path, sessions: Waiting = sessions
            ) -> None:
                session_id = packed.session_id
                waiting = sessions.pop(session_id)
                where = f"{path}: session {session_id}"
                if not packed.ended or packed.broken:
                    why = packed.broken or "no end event: its writer stopped (or is still writing)"
                    for i, attempt, _ in waiting:
                        skip(i, attempt, f"{where} has no end ({why})")
                    return
                for i, attempt, case in waiting:
                    item = RescoreItem(case=case, packed=packed, tape=attempt.tape, before=attempt)
                    scoring.add(item, functools.partial(landed, path, i, attempt, where))

            problem = stream_packed(path, each, notes, wanted=sessions.__contains__)
            for session_id, waiting in sessions.items():
                for i, attempt, _ in waiting:
                    skip(i, attempt, problem or f"{path}: no session {session_id}")
        scoring.flush()
    finally:
        scoring.close()
    ordered = [outcomes[i] for i in sorted(outcomes)]
    return TapesRescored(
        rescored=tuple(o for o in ordered if isinstance(o, Rescored)),
        skipped=tuple(o for o in ordered if isinstance(o, Skipped)),
        notes=tuple(notes),
    )
