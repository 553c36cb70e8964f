"""Putting a live attempt's session into its cassette, replacing the one it re-records.

A cassette (``<cassettes>/<suite>/<case id>.tape``) holds at most one live
session per model and attempt index: the new session is copied in from the
run's own tape and every live session of the same (case, model, attempt) is
dropped, in one atomic rewrite (the recorder's ``rewrite_tape``).  Only a
session at least as complete as the recording goes in
(``_completeness.shortfall``): an outage never wipes a cassette.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evaltape.recorder import Mode, Session, TapeReader, fold
from evaltape.recorder._shared import rewrite_tape

from ._completeness import shortfall
from ._jobs import JobResult
from ._plan import cassette_tape


@attrs.frozen(kw_only=True)
class CassetteUpdate:
    """What became of one attempt's session and its cassette."""

    case_id: str
    """The attempt's case."""
    model: str
    """The attempt's model."""
    attempt: int
    """Zero-based attempt index."""
    cassette: Path
    """``<cassettes>/<suite>/<case id>.tape``."""
    written: bool
    """The new session is in the cassette now (in place of the recording, if any)."""
    why: str = ""
    """Why it was not written ("" when it was)."""
    kept: bool = False
    """Not written, and the cassette's recorded session of this attempt stays."""

    def line(self) -> str:
        """One line for an attempt not written: ``kept the recorded session of ...: why``."""
        who = f"{self.case_id} [{self.model}] (attempt {self.attempt + 1})"
        if self.kept:
            return f"kept the recorded session of {who}: {self.why}"
        return f"did not record {who} into its cassette: {self.why}"


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


def _session(tape: Path, session_ids: tuple[str, ...]) -> Session | None:
    """The fold of the last of ``session_ids`` found in ``tape`` (None: none is readable)."""
    if not session_ids or not tape.exists():
        return None
    found = None
    for recorded in TapeReader(tape, strict=False).sessions():
        if recorded.session_id in session_ids:
            found = recorded
    return fold(found.events) if found is not None else None


def update_cassette(cassettes: Path, result: JobResult) -> CassetteUpdate:
    """Put ``result``'s session into its cassette in place of the recording it repeats,
    when it is at least as complete; otherwise leave the cassette as it is.

    Raises ``TapeError`` when a tape cannot be read or the cassette cannot be written
    (the cassette is then unchanged).
    """
    job = result.job
    cassette, _ = cassette_tape(cassettes, job.case)
    update = CassetteUpdate(
        case_id=job.case.id, model=job.model, attempt=job.attempt, cassette=cassette, written=False
    )
    drop = replaced_sessions(cassette, job.case.id, job.model, job.attempt)
    new = result.session
    if new is None and result.session_id:  # computed in another process: read it back
        new = _session(job.tape, (result.session_id,))
    why = "the attempt left no session" if new is None else shortfall(new, _session(cassette, drop))
    if why:
        if not drop:
            return attrs.evolve(update, why=f"{why} (no recorded session to keep)")
        return attrs.evolve(update, why=why, kept=True)
    cassette.parent.mkdir(parents=True, exist_ok=True)
    rewrite_tape(cassette, drop=drop, source=job.tape, add=(result.session_id,))
    return attrs.evolve(update, written=True)
