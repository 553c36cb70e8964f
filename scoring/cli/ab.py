"""``evaltape ab``: two variants of the harness, run now, interleaved; a report, never a gate."""

from __future__ import annotations

import sys

import click

from evaltape.recorder import Source

from .._config import Config
from ..outputs.console._ab import ABProgress, print_report
from ..outputs.console._progress import CliReporter
from ..outputs.console._terminal import EXIT_INTERRUPTED, fail, masked_console
from ..outputs.formats import ab_json, from_ab
from ..run._ab import ABRequest, run_ab
from ..run._host import Host
from ..run._setup import RunRefused
from ..run._stop import StopKind
from ..verdicts._ab import VariantError, parse_variants
from ._boundary import boundary, interruptible
from ._options import (
    PROBABILITY,
    RETRIES,
    SEED,
    ResultFiles,
    cases_option,
    config_options,
    result_options,
)
from ._results_out import text_report, write_results
from .live import SOURCES

EXIT_AUTH = 2
"""The provider refused the credentials: the A/B could not run."""


EXAMPLE = """\b
Example:
  evaltape ab coding -m gpt-4.1-mini --trials 5 --baseline env:MY_FLAG=0 --candidate env:MY_FLAG=1
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="A/B two variants of the harness now, interleaved; a report, never a gate.",
    epilog=EXAMPLE,
)
@click.argument("suite", required=False, metavar="[SUITE]")
@click.option(
    "--baseline",
    "baseline_spec",
    required=True,
    metavar="env:K=V[,K=V]",
    help="Variant A: environment overrides for its attempts.",
)
@click.option(
    "--candidate",
    "candidate_spec",
    required=True,
    metavar="env:K=V[,K=V]",
    help="Variant B: environment overrides for its attempts.",
)
@click.option("-m", "--model", "model", metavar="MODEL", help="The model under test (both sides).")
@cases_option
@click.option(
    "--alpha",
    type=PROBABILITY,
    default=0.05,
    show_default=True,
    help="Significance level of the per-case and suite-level tests.",
)
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
@click.option(
    "--seed",
    type=SEED,
    default=None,
    help="Sampling seed; trial t of both sides gets seed + t.",
)
@click.option(
    "--retries",
    type=RETRIES,
    default=4,
    show_default=True,
    help="Retries of a 429, 5xx or connection failure before the agent sees it.",
)
@config_options(
    "suites",
    "rubrics",
    "results",
    "agent",
    "base_url",
    "upstream",
    "concurrency",
    "trials",
    "hang_limit",
    "judge_model",
    "judge_base_url",
    "judge_constrain",
    "judge_mean_floor",
    "judge_trial_floor",
    "sandbox",
)
@result_options
@boundary
@interruptible
def ab(
    suite: str | None,
    baseline_spec: str,
    candidate_spec: str,
    model: str | None,
    cases: tuple[str, ...],
    alpha: float,
    source: str,
    source_detail: str,
    seed: int | None,
    retries: int,
    config: Config,
    results: ResultFiles,
) -> None:
    """A/B two variants of the harness now, interleaved; a report, never a gate.

    Both variants run every selected case --trials times with one model, in
    one pool, trial t of each case in ABBA order (A then B when t is even,
    B then A when odd).  Tapes go to <results>/ab/<run id>/<variant>/; the
    cassettes and the run history are not touched.  Prints a verdict per case
    (improved, regressed, unchanged-pass, unchanged-fail, inconclusive) and a
    paired suite-level test.  Exit 0 once it ran, whatever the verdicts; 2 on
    bad input (before any model call) or refused credentials; 130 on Ctrl-C.
    """
    try:
        baseline, candidate = parse_variants(baseline_spec, candidate_spec)
    except VariantError as exc:
        raise RunRefused(str(exc)) from exc

    # Either side's values may be keys: from here on nothing reaches the console unmasked,
    # error lines included (they are printed inside).
    @boundary
    def masked() -> None:
        chosen_model = model or config.model
        if not chosen_model:
            raise RunRefused('no model: pass -m MODEL or set "model" in evaltape.toml')
        host = Host.of_process()
        request = ABRequest(
            config=config,
            host=host,
            baseline=baseline,
            candidate=candidate,
            model=chosen_model,
            cases=cases,
            suite=suite,
            alpha=alpha,
            source=Source(source),
            source_detail=source_detail,
            seed=seed,
            retries=retries,
            reporter=CliReporter(line=ABProgress()),
        )
        outcome = run_ab(request)
        with text_report(results):
            print_report(outcome, baseline, candidate, alpha)
        stopped: dict[StopKind | None, int] = {
            StopKind.AUTH: EXIT_AUTH,
            StopKind.INTERRUPT: EXIT_INTERRUPTED,
        }
        found = from_ab(outcome, chosen_model, stopped.get(outcome.pool.stopped, 0))
        write_results(results, found, lambda: ab_json(outcome, found), host)
        if outcome.pool.stopped is StopKind.AUTH:
            fail(f"{outcome.pool.reason}; check OPENAI_API_KEY / ANTHROPIC_API_KEY", EXIT_AUTH)
        if outcome.pool.stopped is StopKind.INTERRUPT:
            click.echo("evaltape: interrupted; finished attempts were kept", err=True)
            sys.exit(EXIT_INTERRUPTED)

    with masked_console(baseline.secrets + candidate.secrets):
        masked()
