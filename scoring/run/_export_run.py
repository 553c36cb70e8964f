"""Export a finished run later: its attempts as traces and scores, and, on request, the run
as a Langfuse dataset run (``evaltape export RUN``).

``export_run`` takes one ``ExportRequest`` and returns one ``ExportOutcome``.
Attempts the run record says were exported are skipped unless ``again``; one
whose spans went but not every score gets only its missing scores.  The record
is written after each attempt, so stopping halfway loses nothing.  With a
dataset, the suites' cases are made its items and every exported attempt of
the run is linked to its case's item (``export._datasets``), also when every
attempt had been exported before (the link is what is missing then).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import httpx

from evaltape.recorder import Session

from .._config import Config, display_path, scorer_names
from ..cases._cases import Case, CaseError
from ..cases._load import load_suites
from ..checks._score import Score
from ..cost._pricing import resolve_prices, with_price_flags
from ..judge._judgement import JudgeError, Judgement
from ..outputs.export._config import ExportConfig, ExportConfigError, export_config
from ..outputs.export._datasets import DatasetOutcome, RunLabel, RunLink, link_run
from ..outputs.export._exporter import Exporter, ExportJob, Rescore
from ..outputs.export._progress import Delivered, merge, sent_before
from ..outputs.export._send import ExportFailed, Sender
from ..outputs.export._span_model import TraceOptions, span_id, trace_id
from ..results._health import crash_reason
from ..results._record_files import read_record, resolve_run, write_record
from ..results._records import (
    AttemptResult,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
    attempt_key,
)
from ._host import Host
from ._setup import RunRefused
from .attempt._judge_step import default_scorer
from .rescore._rescore import locate_tape, rescore_session

NO_TARGET = (
    "no export target: set LANGFUSE_BASE_URL, LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY, "
    "or OTEL_EXPORTER_OTLP_ENDPOINT"
)
"""Why an export with nothing configured is refused."""


@attrs.frozen(kw_only=True)
class ExportRequest:
    """One ``evaltape export``."""

    run: str = "latest"
    """A run id, a unique prefix, a record path or ``latest``."""
    again: bool = False
    """Also send attempts already exported (same ids)."""
    content: bool = False
    """Put prompts, messages, tool arguments and results, reasons and rationale on spans."""
    dataset: str = ""
    """Langfuse dataset to keep the cases in and link the run's attempts to; "" for none."""


@attrs.frozen(kw_only=True)
class ExportOutcome:
    """What ``export_run`` did."""

    run_id: str
    """The run exported."""
    chosen: int
    """Attempts chosen for sending (0 when every one had been exported)."""
    already: int
    """Attempts the record listed as exported before."""
    exported: int
    """Attempts whose spans and every score were delivered now."""
    scores: int
    """Scores posted (Langfuse only)."""
    langfuse: bool
    """The target is Langfuse."""
    skipped: tuple[str, ...] = ()
    """One line per attempt that could not be built."""
    failure: str = ""
    """The first delivery failure, one line; "" when none."""
    dataset: DatasetOutcome | None = None
    """The dataset run, when one was asked for and the traces went."""


def export_run(
    request: ExportRequest,
    config: Config,
    host: Host,
    note: Callable[[str], None] = lambda line: None,
) -> ExportOutcome:
    """Export ``request.run``; see the module docstring.  ``note`` is told once where
    traces go (endpoints only, never a key) before anything is sent.

    Raises ``RunRefused`` (a run still running, no target, a bad variable, a
    dataset without Langfuse) before anything is sent.
    """
    path = resolve_run(config.results, request.run)
    record = read_record(path)
    if record.state is RunState.RUNNING:
        crashed = crash_reason(record, now=host.clock())
        if crashed:
            raise RunRefused(
                f"run {record.run_id} crashed ({crashed}); close it first with "
                f"`evaltape recover {record.run_id}`, then export it"
            )
        raise RunRefused(f"run {record.run_id} is still running; export it once it has finished")
    target = _target(host, request)
    done = set(record.exported)
    chosen = [
        a
        for a in record.attempts
        if a.session_id
        and a.tape
        and a.verdict is not Verdict.SKIPPED
        and (request.again or attempt_key(a) not in done)
    ]
    base = ExportOutcome(
        run_id=record.run_id,
        chosen=len(chosen),
        already=len(done),
        exported=0,
        scores=0,
        langfuse=target.langfuse,
    )
    cases = _cases(config)
    if chosen:
        note(f"export: {target.describe()}")
        base = _send(request, config, host, record, target, chosen, cases, base)
    if not request.dataset or base.failure or target.scores is None:
        return base
    record = read_record(path)
    with httpx.Client(follow_redirects=False) as client:
        try:
            linked = link_run(Sender(client), target.scores, request.dataset, cases, _links(record))
        except ExportFailed as exc:
            return attrs.evolve(base, failure=str(exc))
    return attrs.evolve(base, dataset=linked)


def _target(host: Host, request: ExportRequest) -> ExportConfig:
    try:
        target = export_config(host.environ)
    except ExportConfigError as exc:
        raise RunRefused(str(exc)) from exc
    if target is None:
        raise RunRefused(NO_TARGET)
    if request.dataset and not target.langfuse:
        raise RunRefused(
            f"dataset {request.dataset!r}: datasets are Langfuse's; set LANGFUSE_PUBLIC_KEY and "
            "LANGFUSE_SECRET_KEY"
        )
    return target


def _send(
    request: ExportRequest,
    config: Config,
    host: Host,
    record: RunRecord,
    target: ExportConfig,
    chosen: list[AttemptResult],
    cases: tuple[Case, ...],
    base: ExportOutcome,
) -> ExportOutcome:
    path = resolve_run(config.results, record.run_id)
    options = TraceOptions(
        run_id=record.run_id,
        agent=config.agent or "agent",
        environment=target.environment,
        user=target.user,
        content=request.content,
    )

    def save(delivered: Delivered) -> None:  # written at once: a later stop loses nothing
        write_record(config.results, merge(read_record(path), (delivered,)))

    prices = with_price_flags(resolve_prices(config.pricing, host.environ), config.price)
    exporter = Exporter(target, options, prices, rescore=_rescorer(cases), on_delivered=save)
    for a in chosen:
        mode = RunKind.REPLAY if a.mode is RunKind.REPLAY else RunKind.LIVE
        tape = locate_tape(a.tape, mode, cassettes=config.cassettes, results=config.results)
        spans, names = (False, ()) if request.again else sent_before(record, attempt_key(a))
        exporter.submit(ExportJob(attempt=a, tape=tape, spans_sent=spans, scores_sent=names))
    report = exporter.close(timeout=None)
    return attrs.evolve(
        base,
        exported=len(report.exported),
        scores=report.scores,
        skipped=report.skipped,
        failure=report.failure,
    )


def _cases(config: Config) -> tuple[Case, ...]:
    """Today's cases (none when the suites cannot be read: checks are then not rescored)."""
    try:
        names, where = scorer_names(config)
        suites = load_suites(
            (display_path(config.suites),),
            rubrics_dir=config.rubrics,
            scorers=names,
            scorers_from=where,
        )
    except CaseError:
        return ()
    return tuple(c for s in suites for c in s.cases)


def _rescorer(cases: tuple[Case, ...]) -> Rescore:
    """Scores sessions again with today's cases, for the checks' scores."""
    by_id = {(c.suite, c.id): c for c in cases}
    scorer = default_scorer()

    def rescore(a: AttemptResult, session: Session) -> tuple[Score | None, Judgement | None]:
        case = by_id.get((a.suite, a.case_id))
        if case is None:
            return None, None
        try:
            done = rescore_session(case, session, scorer, tape=a.tape)
        except JudgeError:
            return None, None
        return done.score, done.judgement

    return rescore


def _links(record: RunRecord) -> tuple[RunLink, ...]:
    """Every attempt of ``record`` whose trace was delivered, as a dataset run link."""
    delivered = set(record.exported) | {key for key, _ in record.export_partial}
    out = []
    for a in record.attempts:
        if attempt_key(a) not in delivered:
            continue
        tid = trace_id(record.run_id, a)
        label = RunLabel(
            run_id=record.run_id, kind=a.mode.value, model=a.model, commit=record.commit
        )
        out.append(
            RunLink(
                suite=a.suite,
                case_id=a.case_id,
                label=label,
                trace_id=tid.hex(),
                observation_id=span_id(tid, "invoke_agent").hex(),
            )
        )
    return tuple(out)
