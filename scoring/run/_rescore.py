"""``run_rescore``: today's cases and scorer applied to recorded sessions; nothing runs.

One ``RescoreRequest`` in, one ``RescoreOutcome`` out: the sessions of a
run record, or of tape files, are scored again (``_rescore``) and a run
record of kind rescore is written.  No agent runs, no model or judge is
called, no socket is opened.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from evaltape.recorder import TapeError

from .._config import Config, display_path
from .._errors import ScoringError
from ..checks._scorers import make_scorer
from ..judge._floors import judge_status
from ..judge._judgement import Floors, JudgeStatus
from ..results._history import RunLog
from ..results._record_files import read_record, resolve_run
from ..results._records import RunKind, RunRecord, RunState, git_commit, make_run_id
from ..verdicts._replaycheck import TAPE_SUFFIX, find_tapes
from ._host import SILENT, Host, Reporter, records_redactor
from ._setup import RunRefused, load_cases, sandbox_for
from .executors._choose import resolve_rescorer
from .rescore._rescore import TapesRescored
from .rescore._run import rescore_run
from .rescore._tapes import rescore_on


@attrs.frozen(kw_only=True)
class RescoreRequest:
    """What to rescore."""

    config: Config
    """Resolved settings: folders, hang limit, judge floors."""
    host: Host
    """The project folder, clock and entropy the rescore reads."""
    sources: tuple[str, ...] = ()
    """One run (``latest``, a run id or prefix, a record path) or tape files and folders;
    empty: every tape under the cassettes folder."""
    latest: bool = False
    """Tapes: rescore only the newest session per case, model and attempt."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    reporter: Reporter = SILENT
    """Where warnings go (a sandbox the user turned off)."""


@attrs.frozen(kw_only=True)
class RescoreOutcome:
    """What a rescore found and the record it wrote."""

    rescore: TapesRescored
    """Every attempt scored again, the ones skipped, and notes on damaged tapes."""
    record: RunRecord
    """The rescore's run record, as written."""
    record_path: Path
    """Where it was written."""
    floors: Floors
    """The judge score floors applied."""
    judge_status: JudgeStatus
    """The judge status of the verdicts reused (or not)."""


def _is_tape_argument(given: str) -> bool:
    path = Path(given)
    return path.is_dir() or (path.is_file() and not given.endswith(".json"))


def run_rescore(request: RescoreRequest) -> RescoreOutcome:
    """Rescore the request's sessions and write a run record of kind rescore.

    Raises ``RunRefused`` (invalid suite files, a run or tape
    that cannot be found or read, two kinds of source at once).
    """
    config, host = request.config, request.host
    floors = Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor)
    suites, chosen = load_cases(config, request.cases, request.suite)
    cases = {c.id: c for s in suites for c in s.cases}
    wanted = {c.id for s in chosen for c in s.cases}
    sandbox = sandbox_for(config, host, request.reporter)
    scorer = make_scorer(hang_limit=config.hang_limit, sandbox=sandbox)
    rescorer = resolve_rescorer(config, host.project)
    tapes = [s for s in request.sources if _is_tape_argument(s)]
    runs = [s for s in request.sources if not _is_tape_argument(s)]
    for given in runs:
        if given.endswith(TAPE_SUFFIX) or given.endswith(os.sep):
            raise RunRefused(f"{given}: no such tape or folder")
    if runs and (tapes or len(runs) > 1):
        raise RunRefused("give one run (latest, a run id or a record path) or tape files, not both")
    run_id = make_run_id(host.clock, host.entropy)
    try:
        if runs:
            source = read_record(resolve_run(config.results, runs[0]))
            note = f"rescore of run {source.run_id}"
            outcome = rescore_run(
                source,
                cases,
                scorer,
                cassettes=config.cassettes,
                results=config.results,
                selected=wanted.__contains__,
                floors=floors,
                rescorer=rescorer,
            )
        else:
            files: list[Path] = []
            for given in tapes or (str(config.cassettes),):
                path = Path(given)
                files.extend(find_tapes(path) if path.is_dir() else (path,))
            if not files:
                where = ", ".join(tapes) or display_path(config.cassettes)
                raise RunRefused(f"no tapes (*{TAPE_SUFFIX}) in {where}")
            note = f"rescore of {len(files)} tape{'' if len(files) == 1 else 's'}"
            outcome = rescore_on(
                rescorer,
                files,
                cases,
                scorer,
                cassettes=config.cassettes,
                results=config.results,
                selected=wanted.__contains__,
                latest=request.latest,
                floors=floors,
            )
    except RunRefused:
        raise
    except (TapeError, ScoringError) as exc:
        raise RunRefused(str(exc)) from exc
    status = judge_status(r.judgement for r in outcome.rescored)
    attempts = [r.attempt_result() for r in outcome.rescored]
    attempts += [s.attempt for s in outcome.skipped if s.attempt is not None]
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.RESCORE,
        state=RunState.RUNNING,
        started_at=host.clock(),
        commit=git_commit(host.project),
        models=tuple(dict.fromkeys(a.model for a in attempts)),
        suites=tuple(dict.fromkeys(a.suite for a in attempts)),
        trials=max((a.attempt + 1 for a in attempts), default=1),
        total=len(attempts),
        attempts=tuple(attempts),
        notes=(note, f"judge_status: {status.value}"),
    )
    log = RunLog(config.results, record, clock=host.clock, redactor=records_redactor(host))
    final = log.finish(RunState.COMPLETED)
    return RescoreOutcome(
        rescore=outcome,
        record=final,
        record_path=log.path,
        floors=floors,
        judge_status=status,
    )
