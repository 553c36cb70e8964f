"""``evaltape export RUN``: send a finished run's attempts as OTLP traces (and Langfuse scores).

Also home of the two steps ``evaltape live`` and ``evaltape replay`` share:
``start_export`` (read the environment, say once where traces go, start the
background exporter) and ``finish_export`` (wait a bounded time, report a
failure in one line, remember what was exported in the run record).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import attrs
import click

from evaltape.recorder import Session
from evaltape.scoring._cli._boundary import boundary, fail
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._config import Config, display_path
from evaltape.scoring.cases._cases import CaseError
from evaltape.scoring.cases._load import load_suites
from evaltape.scoring.checks._score import Score
from evaltape.scoring.cost._pricing import Prices, resolve_prices
from evaltape.scoring.export._config import ExportConfig, ExportConfigError, export_config
from evaltape.scoring.export._exporter import (
    DEFAULT_CLOSE_TIMEOUT,
    Exporter,
    ExportJob,
    ExportReport,
    Rescore,
)
from evaltape.scoring.export._send import ExportFailed
from evaltape.scoring.export._span_model import TraceOptions
from evaltape.scoring.judge._judgement import JudgeError, Judgement
from evaltape.scoring.results._history import RunLog
from evaltape.scoring.results._record_files import read_record, resolve_run, write_record
from evaltape.scoring.results._records import AttemptResult, RunKind, RunState, Verdict, attempt_key
from evaltape.scoring.run._rescore import locate_tape, rescore_session
from evaltape.scoring.run._runner import JobResult, default_scorer


def warning_line(failure: ExportFailed) -> str:
    """``evaltape: warning: export to HOST failed: ...; the run is unaffected``."""
    return f"evaltape: warning: {failure}; the run is unaffected"


def start_export(
    *,
    enabled: bool,
    run_id: str,
    agent: str,
    content: bool,
    prices: Prices,
    environ: Mapping[str, str] = os.environ,
) -> Exporter | None:
    """The run's exporter, or None when exporting is off or nothing is configured.

    A bad export variable exits 2 before any model call.  Prints once, on
    stderr, where traces go (endpoints only, never a key).
    """
    if not enabled:
        return None
    try:
        config = export_config(environ)
    except ExportConfigError as exc:
        fail(str(exc), 2)
        raise AssertionError("unreachable") from exc
    if config is None:
        return None
    click.echo(f"export: {config.describe()}", err=True)
    return _exporter(config, run_id, agent, content, prices)


def _exporter(
    config: ExportConfig, run_id: str, agent: str, content: bool, prices: Prices
) -> Exporter:
    options = TraceOptions(
        run_id=run_id, agent=agent, environment=config.environment, content=content
    )

    def on_failure(failure: ExportFailed) -> None:
        click.echo(warning_line(failure), err=True)

    return Exporter(config, options, prices, on_failure=on_failure)


def export_job(result: JobResult) -> ExportJob:
    """The export job of a finished attempt (its score and judgement as the run saw them)."""
    return ExportJob(
        attempt=result.attempt_result(),
        tape=result.job.tape,
        score=result.score,
        judgement=result.judgement,
    )


def submit(exporter: Exporter | None, result: JobResult) -> None:
    """Queue ``result`` for export; attempts that never ran (no session) are left out."""
    if exporter is not None and result.session_id:
        exporter.submit(export_job(result))


def finish_export(
    exporter: Exporter | None, log: RunLog, timeout: float = DEFAULT_CLOSE_TIMEOUT
) -> None:
    """Wait (at most ``timeout``) for the exporter; record the exported keys in the run."""
    if exporter is None:
        return
    report = exporter.close(timeout)
    if report.unfinished:
        click.echo(
            f"evaltape: warning: export to {exporter.config.traces.host} did not finish within "
            f"{timeout:g} s ({report.unfinished} attempt(s) not exported); the run is unaffected",
            err=True,
        )
    for line in report.skipped:
        click.echo(f"evaltape: warning: not exported: {line}", err=True)
    if report.exported:
        merged = tuple(dict.fromkeys((*log.record.exported, *report.exported)))
        log.update(exported=merged)


# -- the command ---------------------------------------------------------------------


def _rescorer(config: Config) -> Rescore:
    """Scores sessions again with today's cases, for the checks' scores."""
    try:
        suites = load_suites((display_path(config.suites),), rubrics_dir=config.rubrics)
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


@click.command(name="export")
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
@config_options("suites", "rubrics", "cassettes", "results", "agent", "pricing")
@boundary
def export(run: str, again: bool, content: bool, config: Config) -> None:
    """Export the attempts of a finished run RUN (default: latest) as OTLP traces.

    Where they go comes from the environment: LANGFUSE_HOST /
    LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY (traces and scores), else
    OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (with
    OTEL_EXPORTER_OTLP_HEADERS).  Attempts the run record says were exported
    are skipped unless --again.  Exit 0 when every attempt was sent, 1 when
    the export failed, 2 when nothing is configured or a variable is bad.
    """
    path = resolve_run(config.results, run)
    record = read_record(path)
    if record.state is RunState.RUNNING:
        fail(f"run {record.run_id} is still running; export it once it has finished", 2)
    try:
        target = export_config(os.environ)
    except ExportConfigError as exc:
        fail(str(exc), 2)
        return
    if target is None:
        fail(
            "no export target: set LANGFUSE_HOST, LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY, "
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
    prices = resolve_prices(config.pricing, os.environ)
    options = TraceOptions(
        run_id=record.run_id,
        agent=config.agent or "agent",
        environment=target.environment,
        content=content,
    )
    exporter = Exporter(target, options, prices, rescore=_rescorer(config))
    for a in chosen:
        mode = RunKind.REPLAY if a.mode is RunKind.REPLAY else RunKind.LIVE
        tape = locate_tape(a.tape, mode, cassettes=config.cassettes, results=config.results)
        exporter.submit(ExportJob(attempt=a, tape=tape))
    report = exporter.close(timeout=None)
    _save(config.results, path, report)
    for line in report.skipped:
        click.echo(f"evaltape: warning: not exported: {line}", err=True)
    scores = f", {report.scores} scores" if target.langfuse else ""
    click.echo(
        f"run {record.run_id}: exported {len(report.exported)} of {len(chosen)} attempt(s){scores}"
    )
    if report.failure:
        fail(report.failure, 1)


def _save(results: Path, path: Path, report: ExportReport) -> None:
    """Merge the delivered keys into the record, re-read so a concurrent edit is kept."""
    if not report.exported:
        return
    record = read_record(path)
    merged = tuple(dict.fromkeys((*record.exported, *report.exported)))
    write_record(results, attrs.evolve(record, exported=merged))
