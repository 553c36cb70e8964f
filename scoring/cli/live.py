"""``evaltape live``: real attempts against a model API, each recorded to a tape."""

from __future__ import annotations

import sys

import click

from evaltape.recorder import Source

from .._config import Config
from ..outputs.console._live import render_outcome
from ..outputs.console._progress import CliReporter
from ..outputs.formats import from_live, live_json
from ..run._gate_flow import GateOptions
from ..run._host import Host
from ..run._live import LiveRequest, run_live
from ..run._setup import RunRefused
from . import _gate_flow
from ._boundary import boundary, interruptible
from ._options import (
    RETRIES,
    SECONDS,
    CommonFirst,
    ResultFiles,
    cases_option,
    config_options,
    result_options,
)
from ._results_out import exit_code_of, text_report, write_results

SOURCES = (Source.REAL_API, Source.LOCAL_SERVER, Source.SIMULATED)


def models_of(model: str | None, compare: str | None, config: Config) -> tuple[str, ...]:
    """The models under test from ``-m`` / ``--compare`` / config; ``RunRefused`` if none."""
    if compare is not None:
        models = tuple(dict.fromkeys(m.strip() for m in compare.split(",") if m.strip()))
        if len(models) < 2:
            raise RunRefused(
                "--compare needs at least two models separated by commas (--compare m1,m2)"
            )
        return models
    if model is not None and not model.strip():
        raise RunRefused("-m/--model must not be empty")
    chosen = model or config.model
    if not chosen:
        raise RunRefused(
            'no model: pass -m MODEL, --compare m1,m2, or set "model" in evaltape.toml'
        )
    return (chosen,)


EXAMPLE = """\b
Example:
  evaltape live -m gpt-4.1-mini --gate --junit gate.xml
"""
"""The example ``--help`` ends with."""


@click.command(
    cls=CommonFirst,
    common=(
        "model",
        "compare",
        "trials",
        "cases",
        "suite",
        "update_cassettes",
        "agent",
        "base_url",
        "concurrency",
        "price",
        "pricing",
        "gate",
        "config_file",
    ),
    short_help="Run the selected cases live, each attempt recorded to the run's own tapes.",
    epilog=EXAMPLE,
)
@click.option("-m", "--model", "model", metavar="MODEL", help="The model under test.")
@click.option(
    "--compare",
    metavar="M1,M2",
    help="Run every case with each of these models, through one pool.",
)
@cases_option
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--source",
    type=click.Choice([s.value for s in SOURCES]),
    default=Source.REAL_API.value,
    show_default=True,
    help="Where the model responses come from, as recorded in each session.",
)
@click.option(
    "--source-detail",
    default="",
    metavar="TEXT",
    help='Free text naming the server and model, e.g. "llama.cpp SmolLM2-135M".',
)
@click.option("--seed", type=int, default=None, help="Sampling seed handed to the agent.")
@click.option(
    "--time-limit",
    type=SECONDS,
    default=None,
    metavar="SECONDS",
    help="Stop the whole run after this long; finished attempts are kept (exit 124).",
)
@click.option(
    "--retries",
    type=RETRIES,
    default=4,
    show_default=True,
    help="Retries of a 429, 5xx or connection failure before the agent sees it.",
)
@click.option(
    "--entry-check",
    is_flag=True,
    help="Run only the new or edited cases, 3 times each; exit 1 when a case's attempts split.",
)
@click.option(
    "--update-cassettes",
    is_flag=True,
    help="Also put each attempt's session into <cassettes>/<suite>/<case>.tape, replacing "
    "the recording of the same case, model and attempt when it is at least as complete "
    "(never with --gate).",
)
@click.option(
    "--no-export",
    is_flag=True,
    help="Do not export traces, even when LANGFUSE_* or OTEL_EXPORTER_OTLP_* is set.",
)
@click.option(
    "--export-content",
    is_flag=True,
    help="Exported traces include prompts, messages, tool arguments and results, reasons "
    "and the judge's rationale (off by default).",
)
@config_options(
    "suites",
    "rubrics",
    "cassettes",
    "results",
    "agent",
    "base_url",
    "upstream",
    "concurrency",
    "executor",
    "ray_address",
    "ray_working_dir",
    "trials",
    "hang_limit",
    "scorers",
    "judge_model",
    "judge_base_url",
    "judge_constrain",
    "judge_mean_floor",
    "judge_trial_floor",
    "pricing",
    "price",
    "sandbox",
)
@_gate_flow.gate_options
@result_options
@boundary
@interruptible
def live(
    model: str | None,
    compare: str | None,
    cases: tuple[str, ...],
    suite: str | None,
    source: str,
    source_detail: str,
    seed: int | None,
    time_limit: float | None,
    retries: int,
    entry_check: bool,
    update_cassettes: bool,
    no_export: bool,
    export_content: bool,
    config: Config,
    gate_opts: GateOptions,
    listing: _gate_flow.BaselineListing,
    results: ResultFiles,
) -> None:
    """Run the selected cases live, each attempt recorded to the run's own tapes.

    The run's tapes are <results>/tapes/<run id>/<suite>/<case>.tape.

    With --update-cassettes each session also replaces the recording of the same
    case, model and attempt in <cassettes>/<suite>/<case>.tape (atomically), so
    cassettes never hold duplicates; a session that ended in a provider error, a
    refused connection, a stream cut short or with no answer (or failed with
    fewer answered calls than the recording) keeps the recording instead;
    --gate never changes the cassettes.

    Suites are validated first (bad input: FILE:LINE errors, exit 2, no model
    call).  Prints one line per finished attempt on stderr and a per-model
    summary.  Exit 0 when the run finished (whatever the verdicts; with --gate:
    1 when the gate closed), 2 on bad input or refused credentials, 4 when
    --update-cassettes could not record an attempt, 124 at --time-limit, 130 on
    Ctrl-C, SIGTERM or SIGHUP (no new model call is sent after it).  The API
    key is read by the agent from the environment and never written.
    --entry-check runs only the cases no judged live attempt covers under their
    current definition, 3 times each, and exits 1 when one splits (a bad case)
    or could not be judged; nothing new: exit 0 and no model call.
    """
    if _gate_flow.listing(listing, config):
        return
    trials = _gate_flow.trials(gate_opts, config)
    host = Host.of_process()
    request = LiveRequest(
        config=config,
        host=host,
        models=models_of(model, compare, config),
        trials=trials,
        cases=cases,
        suite=suite,
        source=Source(source),
        source_detail=source_detail,
        seed=seed,
        time_limit=time_limit,
        retries=retries,
        entry_check=entry_check,
        update_cassettes=update_cassettes,
        export=not no_export,
        export_content=export_content,
        gate=gate_opts,
        reporter=CliReporter(),
    )
    outcome = run_live(request)
    if not outcome.ran:
        with text_report(results):
            click.echo("entry check: no new or edited case; nothing was run")
        code = 0
    else:
        with text_report(results):
            code = exit_code_of(lambda: render_outcome(outcome, gate_opts))
    found = from_live(outcome, code)
    write_results(results, found, lambda: live_json(outcome, found), host)
    sys.exit(code)
