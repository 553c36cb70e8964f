"""``run_coverage``: what the recorded attempts can catch, per tool and case; optionally proven.

One ``CoverageRequest`` in, one ``CoverageOutcome`` out.  Every complete live
session of the selected cases is folded and scored with today's scorers
(as ``evaltape rescore`` scores it: no agent runs, no model is called) and
tallied (``verdicts._coverage``).  With ``mutate``, standard mutations are
planted one at a time in a copy of a Python agent's tools and each copy is
replayed against the same tapes (``mutate``): which mutations the tapes
catch, and which they miss.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evaltape.recorder import Mode, TapeError, TapeReader, fold

from .._config import Config, display_path
from .._errors import ScoringError
from ..checks._scorers import make_scorer
from ..verdicts._coverage import Attempt, Coverage, tally
from ._host import SILENT, Host, Reporter
from ._replay import tapes_to_replay
from ._setup import RunRefused, load_cases, sandbox_for
from .mutate._mutants import MutationOutcome, run_mutants
from .rescore._rescore import rescore_session, tape_label


@attrs.frozen(kw_only=True)
class CoverageRequest:
    """Which recordings to read, and whether to prove them with mutations."""

    config: Config
    """Resolved settings: suites, cassettes, agent (for ``mutate``), hang limit, sandbox."""
    host: Host
    """The project folder, environment, clock and entropy."""
    tapes: tuple[Path, ...] = ()
    """Tape files or folders; empty: every tape under the cassettes folder."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    mutate: bool = False
    """Also plant each standard mutation in a copy of the agent's tools and replay."""
    reporter: Reporter = SILENT
    """Where progress goes (one line per mutation)."""


@attrs.frozen(kw_only=True)
class CoverageOutcome:
    """What coverage found."""

    coverage: Coverage
    """Per suite: a row per tool, a row per case, the verdict."""
    tapes: tuple[Path, ...]
    """The tape files read."""
    skipped: tuple[str, ...] = ()
    """Sessions or tapes left out, one line each (unreadable, no end, case gone)."""
    mutants: MutationOutcome | None = None
    """With ``mutate``: every mutation planted and whether the tapes caught it."""


def read_attempts(
    config: Config, host: Host, files: tuple[Path, ...], wanted: set[str], reporter: Reporter
) -> tuple[list[Attempt], list[str]]:
    """Every complete live session of a wanted case in ``files``, scored today."""
    suites, _ = load_cases(config, (), None)
    cases = {c.id: c for s in suites for c in s.cases}
    scorer = make_scorer(hang_limit=config.hang_limit, sandbox=sandbox_for(config, host, reporter))
    attempts: list[Attempt] = []
    skipped: list[str] = []
    for tape in files:
        label = tape_label(tape, cassettes=config.cassettes, results=config.results)
        try:
            for recorded in TapeReader(tape, strict=False).sessions():
                header = recorded.header
                what = f"{display_path(tape)}: session {recorded.session_id}"
                if header.mode is Mode.LIVE and header.case_id not in cases:
                    skipped.append(f"{what} ({header.case_id}): the case no longer exists; skipped")
                if header.mode is not Mode.LIVE or header.case_id not in wanted:
                    continue
                if not recorded.complete:
                    skipped.append(f"{what} has no end; skipped")
                    continue
                session = fold(recorded.events)
                try:
                    scored = rescore_session(cases[header.case_id], session, scorer, tape=label)
                except ScoringError as exc:
                    skipped.append(f"{what}: cannot be scored: {exc}")
                    continue
                attempts.append(Attempt(case=scored.case, session=session, verdict=scored.verdict))
        except (TapeError, OSError) as exc:
            skipped.append(f"{display_path(tape)}: unreadable: {exc}")
    return attempts, skipped


def run_coverage(request: CoverageRequest) -> CoverageOutcome:
    """Tally what the request's recordings can catch, and with ``mutate`` prove it.

    Raises ``RunRefused`` before anything runs on bad input (invalid suites, a
    missing tape or folder, no tapes, an unknown case or suite), and for
    ``mutate`` when the agent is not a Python package or module whose tools
    are functions named for them, or when the intact copy does not replay
    unchanged.
    """
    config, host = request.config, request.host
    _, chosen = load_cases(config, request.cases, request.suite)
    wanted = {c.id for s in chosen for c in s.cases}
    files = tapes_to_replay(request.tapes or (config.cassettes,))
    attempts, skipped = read_attempts(config, host, files, wanted, request.reporter)
    coverage = tally(attempts)
    if not request.mutate:
        return CoverageOutcome(coverage=coverage, tapes=files, skipped=tuple(skipped))
    if not attempts:
        raise RunRefused("no recorded attempt to replay; --mutate has nothing to test")
    mutants = run_mutants(
        config, host, tapes=files, attempts=tuple(attempts), reporter=request.reporter
    )
    return CoverageOutcome(coverage=coverage, tapes=files, skipped=tuple(skipped), mutants=mutants)
