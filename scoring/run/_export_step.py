"""The export steps live and replay runs share: start the exporter, submit, finish.

``start_export`` reads the export settings from the run's environment, says
once (a reporter note) where traces go and starts the background exporter;
``finish_export`` waits a bounded time, reports what did not go as warnings
and remembers what was exported in the run record.  An export failure never
fails the run.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..cost._pricing import Prices
from ..outputs.export._config import export_config
from ..outputs.export._exporter import DEFAULT_CLOSE_TIMEOUT, Exporter, ExportJob
from ..outputs.export._progress import merge
from ..outputs.export._send import ExportFailed
from ..outputs.export._span_model import TraceOptions
from ..results._history import RunLog
from ._host import Reporter
from ._jobs import JobResult


def start_export(
    *,
    run_id: str,
    agent: str,
    content: bool,
    prices: Prices,
    environ: Mapping[str, str],
    reporter: Reporter,
) -> Exporter | None:
    """The run's exporter, or None when nothing is configured.

    Raises ``ExportConfigError`` on a bad export variable (before any model
    call).  Notes once where traces go (endpoints only, never a key).
    """
    config = export_config(environ)
    if config is None:
        return None
    reporter.note(f"export: {config.describe()}")
    options = TraceOptions(
        run_id=run_id,
        agent=agent,
        environment=config.environment,
        user=config.user,
        content=content,
    )

    def on_failure(failure: ExportFailed) -> None:
        reporter.warning(f"{failure}; the run is unaffected")

    return Exporter(config, options, prices, on_failure=on_failure)


def export_job(result: JobResult) -> ExportJob:
    """The export job of a finished attempt (its score and judgement as the run saw them)."""
    return ExportJob(
        attempt=result.attempt_result(),
        tape=result.job.tape,
        score=result.score,
        judgement=result.judgement,
        session=result.session,
    )


def submit(exporter: Exporter | None, result: JobResult) -> None:
    """Queue ``result`` for export; attempts that never ran (no session) are left out."""
    if exporter is not None and result.session_id:
        exporter.submit(export_job(result))


def finish_export(
    exporter: Exporter | None,
    log: RunLog,
    reporter: Reporter,
    timeout: float = DEFAULT_CLOSE_TIMEOUT,
) -> None:
    """Wait (at most ``timeout``) for the exporter; record in the run what was delivered
    (attempts exported in full, and those whose spans went but not every score)."""
    if exporter is None:
        return
    report = exporter.close(timeout)
    if report.unfinished:
        reporter.warning(
            f"export to {exporter.config.traces.host} did not finish within "
            f"{timeout:g} s ({report.unfinished} attempt(s) not exported); the run is unaffected"
        )
    for line in report.skipped:
        reporter.warning(f"not exported: {line}")
    if report.delivered:
        merged = merge(log.record, report.delivered)
        log.update(exported=merged.exported, export_partial=merged.export_partial)
