"""``evaltape export RUN``: send a finished run's attempts as OTLP traces (and Langfuse scores).

The export steps of ``evaltape live`` and ``replay`` are the library's
(``run._export_step``).
"""

from __future__ import annotations

import click

from evaltape.recorder import Session
from evaltape.scoring._cli._boundary import boundary, fail
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._config import Config, display_path, scorer_names
from evaltape.scoring.cases._cases import CaseError
from evaltape.scoring.cases._load import load_suites
from evaltape.scoring.checks._score import Score
from evaltape.scoring.cost._pricing import resolve_prices, with_price_flags
from evaltape.scoring.export._config import ExportConfigError, export_config
from evaltape.scoring.export._exporter import Exporter, ExportJob, Rescore
from evaltape.scoring.export._progress import Delivered, merge, sent_before
from evaltape.scoring.export._span_model import TraceOptions
from evaltape.scoring.judge._judgement import JudgeError, Judgement
from evaltape.scoring.results._record_files import read_record, resolve_run, write_record
from evaltape.scoring.results._records import AttemptResult, RunKind, RunState, Verdict, attempt_key
from evaltape.scoring.run._host import Host
from evaltape.scoring.run._judge_step import default_scorer
from evaltape.scoring.run._rescore import locate_tape, rescore_session

# -- the command ---------------------------------------------------------------------


def _rescorer(config: Config) -> Rescore:
    """Scores sessions again with today's cases, for the checks' scores."""
    try:
        names, where = scorer_names(config)
        suites = load_suites(
            (display_path(config.suites),),
            rubrics_dir=config.rubrics,
            scorers=names,
            scorers_from=where,
        )
    except CaseError:
        suites = ()
    cases = {(c.suite, c.id): c for s in suites for c in s.cases}
    scorer = default_scorer()

    def rescore(a: AttemptResult, session: Session) -> tuple[Score | None, Judgement | None]:
        case = cases.get((a.suite, a.case_id))
        if case is None:
            return None, None
        try:
            done = rescore_session(case, session, scorer, tape=a.tape)
        except JudgeError:
            return None, None
        return done.score, done.judgement

    return rescore


EXAMPLE = """\b
Example:
  evaltape export latest --export-content
"""
"""The example ``--help`` ends with."""


@click.command(
    "export",
    short_help="Export the attempts of a finished run RUN (default: latest) as OTLP traces.",
    epilog=EXAMPLE,
)
@click.argument("run", default="latest")
@click.option(
    "--again",
    is_flag=True,
    help="Also send attempts already exported (same trace and score ids; Langfuse keeps "
    "a second copy of the spans, scores are overwritten).",
)
@click.option(
    "--export-content",
    "content",
    is_flag=True,
    help="Include prompts, messages, tool arguments and results, reasons and the judge's "
    "rationale.  Off by default: only structure, timings, usage, costs and scores leave.",
)
@config_options("suites", "rubrics", "cassettes", "results", "agent", "pricing", "price")
@boundary
def export(run: str, again: bool, content: bool, config: Config) -> None:
    """Export the attempts of a finished run RUN (default: latest) as OTLP traces.

    Where they go comes from the environment: LANGFUSE_BASE_URL /
    LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY (traces and scores), else
    OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (with
    OTEL_EXPORTER_OTLP_HEADERS).  Attempts the run record says were exported
    are skipped unless --again; one whose spans went but not every score gets
    only its missing scores.  Exit 0 when every attempt was sent, 1 when
    the export failed, 2 when nothing is configured or a variable is bad.
    """
    path = resolve_run(config.results, run)
    record = read_record(path)
    if record.state is RunState.RUNNING:
        fail(f"run {record.run_id} is still running; export it once it has finished", 2)
    environ = Host.of_process().environ
    try:
        target = export_config(environ)
    except ExportConfigError as exc:
        fail(str(exc), 2)
        return
    if target is None:
        fail(
            "no export target: set LANGFUSE_BASE_URL, LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY, "
            "or OTEL_EXPORTER_OTLP_ENDPOINT",
            2,
        )
        return
    done = set(record.exported)
    chosen = [
        a
        for a in record.attempts
        if a.session_id
        and a.tape
        and a.verdict is not Verdict.SKIPPED
        and (again or attempt_key(a) not in done)
    ]
    if not chosen:
        click.echo(f"run {record.run_id}: nothing to export ({len(done)} already exported)")
        return
    click.echo(f"export: {target.describe()}", err=True)
    prices = with_price_flags(resolve_prices(config.pricing, environ), config.price)
    options = TraceOptions(
        run_id=record.run_id,
        agent=config.agent or "agent",
        environment=target.environment,
        user=target.user,
        content=content,
    )

    def save(delivered: Delivered) -> None:  # written at once: a later stop loses nothing
        write_record(config.results, merge(read_record(path), (delivered,)))

    exporter = Exporter(target, options, prices, rescore=_rescorer(config), on_delivered=save)
    for a in chosen:
        mode = RunKind.REPLAY if a.mode is RunKind.REPLAY else RunKind.LIVE
        tape = locate_tape(a.tape, mode, cassettes=config.cassettes, results=config.results)
        spans, names = (False, ()) if again else sent_before(record, attempt_key(a))
        exporter.submit(ExportJob(attempt=a, tape=tape, spans_sent=spans, scores_sent=names))
    report = exporter.close(timeout=None)
    for line in report.skipped:
        click.echo(f"evaltape: warning: not exported: {line}", err=True)
    scores = f", {report.scores} scores" if target.langfuse else ""
    click.echo(
        f"run {record.run_id}: exported {len(report.exported)} of {len(chosen)} attempt(s){scores}"
    )
    if report.failure:
        fail(report.failure, 1)
