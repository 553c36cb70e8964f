"""``make_report``: one run (or A/B, or comparison) in, one HTML file out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.recorder import TapeError, fold

from ..._config import Config, display_path, scorer_names
from ...cases._cases import Case
from ...cases._load import load_suites
from ...checks._scorers import make_scorer
from ...results._record_files import write_atomic
from ...results._records import AttemptResult, RunKind, RunRecord
from ...run.rescore._rescore import TapeCache, locate_tape
from ...run.rescore._trace import Cut, attempt_lines
from ...sandbox import Sandbox
from ...verdicts._coverage import Attempt, Coverage, tally
from ._html import render_html
from ._model import Report, build_report
from ._runs import load_runs


@attrs.frozen(kw_only=True)
class ReportRequest:
    """Which run to report on and where the page goes."""

    config: Config
    """Folders (results, cassettes, suites, rubrics), the hang limit and custom scorers."""
    run: str = "latest"
    """``latest``, a run id or unique prefix, a record file, or an A/B run id or folder."""
    base: str | None = None
    """Compare against this run (same forms, A/B excepted); None: no comparison."""
    output: Path = Path("report.html")
    """The HTML file to write (replaced atomically)."""
    width: int | None = Cut().limit
    """Characters of one trace value shown before it is cut; None shows everything."""
    sandbox: Sandbox | None = None
    """Where traces rescore verify commands; None: ``Sandbox.find()`` (refused without
    bubblewrap)."""


@attrs.frozen(kw_only=True)
class ReportOutcome:
    """What was written."""

    path: Path
    """The HTML file."""
    report: Report
    """Its content as values."""
    size: int
    """Bytes written."""


def _coverage(
    record: RunRecord, cases: Mapping[str, Case], config: Config, tapes: TapeCache
) -> Coverage | None:
    """For a replay run: what its recorded attempts can catch (each attempt's rescored
    verdict, the tool calls of its replayed session); None for other runs."""
    if record.kind is not RunKind.REPLAY:
        return None
    attempts = []
    for a in record.attempts:
        case = cases.get(a.case_id)
        if case is None or a.rescored is None or not a.tape:
            continue
        tape = locate_tape(a.tape, a.mode, cassettes=config.cassettes, results=config.results)
        found = tapes.sessions(tape)
        recorded = found.get(a.session_id) if isinstance(found, dict) else None
        if recorded is not None:
            attempts.append(Attempt(case=case, session=fold(recorded.events), verdict=a.rescored))
    return tally(attempts)


def make_report(request: ReportRequest) -> ReportOutcome:
    """Read the run(s), rescore each attempt's trace with today's cases and write the page.

    Raises ``RecordError`` (no such run, unreadable record) and ``CaseError``
    (invalid suite files) before anything is written.
    """
    config = request.config
    runs = load_runs(config.results, request.run, request.base)
    names, where = scorer_names(config)
    suites = load_suites(
        (display_path(config.suites),),
        rubrics_dir=display_path(config.rubrics),
        scorers=names,
        scorers_from=where,
    )
    cases = {c.id: c for s in suites for c in s.cases}
    scorer = make_scorer(hang_limit=config.hang_limit, sandbox=request.sandbox)
    tapes = TapeCache()
    cut = Cut(limit=request.width)

    def trace(attempt: AttemptResult) -> list[str]:
        try:
            return attempt_lines(
                attempt,
                cases.get(attempt.case_id),
                scorer,
                cassettes=config.cassettes,
                results=config.results,
                tapes=tapes,
                cut=cut,
            )
        except TapeError as exc:
            return [f"cannot read the session: {exc}"]

    report = attrs.evolve(
        build_report(runs, trace), coverage=_coverage(runs.current, cases, config, tapes)
    )
    text = render_html(report)
    write_atomic(request.output, text)
    return ReportOutcome(path=request.output, report=report, size=len(text.encode("utf-8")))
