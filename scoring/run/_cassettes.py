"""Putting a live attempt's session into its cassette, replacing the one it re-records.

A cassette (``<cassettes>/<suite>/<case id>.tape``) holds at most one live
session per model and attempt index: the new session is copied in from the
run's own tape and every live session of the same (case, model, attempt) is
dropped, in one atomic rewrite (``evaltape.recorder.rewrite_tape``).
"""

from __future__ import annotations

from pathlib import Path

from evaltape.recorder import Mode, Status, TapeReader, rewrite_tape
from evaltape.scoring.run._jobs import JobResult
from evaltape.scoring.run._plan import cassette_tape

NOT_EVIDENCE = (Status.INTERRUPTED,)
"""Sessions that say nothing about the model (cancelled before they ended): they never
replace a recording."""


def replaced_sessions(tape: Path, case_id: str, model: str, attempt: int) -> tuple[str, ...]:
    """The live sessions of ``tape`` recording this case, model and attempt index."""
    if not tape.exists():
        return ()
    found = []
    for info in TapeReader(tape, strict=False).scan():
        h = info.header
        if (
            h is not None
            and h.mode is Mode.LIVE
            and (h.case_id, h.model, h.attempt) == (case_id, model, attempt)
        ):
            found.append(info.session_id)
    return tuple(found)


def update_cassette(cassettes: Path, result: JobResult) -> Path | None:
    """Put ``result``'s session into its cassette in place of the recording it repeats.

    Returns the cassette, or None when the attempt left nothing to record
    (no session, or it was cancelled): the old
    recording is then kept.
    """
    job = result.job
    if not result.session_id or result.status in NOT_EVIDENCE:
        return None
    cassette, _ = cassette_tape(cassettes, job.case)
    cassette.parent.mkdir(parents=True, exist_ok=True)
    drop = replaced_sessions(cassette, job.case.id, job.model, job.attempt)
    rewrite_tape(cassette, drop=drop, source=job.tape, add=(result.session_id,))
    return cassette
