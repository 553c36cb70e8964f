"""``evaltape export RUN``: send a finished run's attempts as OTLP traces (and Langfuse scores),
and with ``--dataset`` link them to a Langfuse dataset as a dataset run.

The work is the library's (``run._export_run``); the export steps of
``evaltape live`` and ``replay`` are ``run._export_step``.
"""

from __future__ import annotations

import click

from .._config import Config
from ..outputs.console._exit import fail
from ..run._export_run import ExportOutcome, ExportRequest, export_run
from ..run._host import Host
from ._boundary import boundary
from ._options import config_options

EXAMPLE = """\b
Example:
  evaltape export latest --dataset evaltape-basic
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
@config_options("suites", "rubrics", "cassettes", "results", "agent", "pricing", "price", "dataset")
@boundary
def export(run: str, again: bool, content: bool, config: Config) -> None:
    """Export the attempts of a finished run RUN (default: latest) as OTLP traces.

    Where they go comes from the environment: LANGFUSE_BASE_URL /
    LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY (traces and scores), else
    OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (with
    OTEL_EXPORTER_OTLP_HEADERS).  Attempts the run record says were exported
    are skipped unless --again; one whose spans went but not every score gets
    only its missing scores.  With --dataset (Langfuse only) the suites' cases
    become the dataset's items and every exported attempt is linked to its
    case's item in a dataset run named after this run.  Exit 0 when every
    attempt was sent, 1 when the export failed, 2 when nothing is configured or
    a variable is bad.
    """
    request = ExportRequest(run=run, again=again, content=content, dataset=config.dataset or "")
    outcome = export_run(
        request, config, Host.of_process(), note=lambda line: click.echo(line, err=True)
    )
    _render(outcome)
    if outcome.failure:
        fail(outcome.failure, 1)


def _render(outcome: ExportOutcome) -> None:
    for line in outcome.skipped:
        click.echo(f"evaltape: warning: not exported: {line}", err=True)
    if not outcome.chosen:
        click.echo(f"run {outcome.run_id}: nothing to export ({outcome.already} already exported)")
    else:
        scores = f", {outcome.scores} scores" if outcome.langfuse else ""
        click.echo(
            f"run {outcome.run_id}: exported {outcome.exported} of {outcome.chosen} "
            f"attempt(s){scores}"
        )
    linked = outcome.dataset
    if linked is not None:
        click.echo(
            f"dataset {linked.dataset}: {linked.items} item(s), {linked.linked} trace(s) linked"
            f" ({linked.already} linked before)"
        )
        for name in linked.unmatched:
            click.echo(f"evaltape: warning: not linked: {name} is no longer a case", err=True)
