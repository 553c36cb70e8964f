"""``evaltape compare BASE CURRENT``: the regression report for two finished runs.

Either side is a run (``latest``, a run id or unique prefix, a record file)
or a saved baseline (``baseline:NAME``).  The comparison is paired on the
cases both ran, with the model each side ran; nothing runs and nothing is
written.  It reports, it does not decide: the exit code is 0 whatever the
result (``evaltape live --gate`` is the decision).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from evaltape.scoring._cli._boundary import boundary
from evaltape.scoring._cli._gate_flow import folder
from evaltape.scoring._cli._options import ResultFiles, config_options, result_options
from evaltape.scoring._cli._results_out import text_report, write_results
from evaltape.scoring._config import Config, display_path
from evaltape.scoring._errors import ScoringError
from evaltape.scoring.report_formats import compare_json, from_comparison
from evaltape.scoring.results import _baselines as baselines
from evaltape.scoring.results._record_files import read_record, resolve_run
from evaltape.scoring.results._records import AttemptResult
from evaltape.scoring.run._host import Host
from evaltape.scoring.verdicts._compare import compare
from evaltape.scoring.verdicts._compare_render import render_comparison

BASELINE_PREFIX = "baseline:"


class CompareError(ScoringError):
    """The two sides cannot be compared as asked."""


def _side(spec: str, config: Config, model: str | None) -> tuple[list[AttemptResult], str, str]:
    """The attempts ``spec`` names, for one model, a label for the report and the run id
    ("" for a baseline)."""
    if spec.startswith(BASELINE_PREFIX):
        b = baselines.load(folder(config), spec[len(BASELINE_PREFIX) :])
        if model is not None and b.model != model:
            raise CompareError(f'baseline "{b.name}" ran with model {b.model}, not {model}')
        return list(b.attempts), f'baseline "{b.name}"', ""
    path = resolve_run(config.results, spec)
    record = read_record(path)
    models = sorted({a.model for a in record.attempts})
    if model is not None:
        if model not in models:
            raise CompareError(
                f"{display_path(path)}: no attempts with model {model} (has: {', '.join(models)})"
            )
        chosen = model
    elif len(models) == 1:
        chosen = models[0]
    else:
        raise CompareError(
            f"{display_path(path)}: ran {len(models)} models ({', '.join(models)}); "
            "pick one with --model"
        )
    commit = f" @{record.commit}" if record.commit else ""
    chosen_attempts = [a for a in record.attempts if a.model == chosen]
    return chosen_attempts, f"run {record.run_id}{commit}", record.run_id


def _only(attempts: Sequence[AttemptResult], suite: str | None) -> list[AttemptResult]:
    return [a for a in attempts if suite is None or a.suite == suite]


EXAMPLE = """\b
Example:
  evaltape compare baseline:release-2026-12 latest --json compare.json
"""
"""The example ``--help`` ends with."""


@click.command(
    "compare",
    short_help="Print the regression report of CURRENT (default: latest) against BASE.",
    epilog=EXAMPLE,
)
@click.argument("base", metavar="BASE")
@click.argument("current", metavar="[CURRENT]", default="latest")
@click.option("--model", default=None, metavar="MODEL", help="The model to compare on both sides.")
@click.option(
    "--base-model",
    default=None,
    metavar="MODEL",
    help="The baseline side's model, when it differs on purpose (a model comparison).",
)
@click.option("--suite", default=None, metavar="NAME", help="Only the cases of suite NAME.")
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the paired test.",
)
@config_options("suites", "results")
@result_options
@boundary
def compare_cmd(
    base: str,
    current: str,
    model: str | None,
    base_model: str | None,
    suite: str | None,
    alpha: float,
    config: Config,
    results: ResultFiles,
) -> None:
    """Print the regression report of CURRENT (default: latest) against BASE.

    BASE and CURRENT are run ids (or unique prefixes), ``latest``, run record
    files, or ``baseline:NAME``.  Paired on the common cases: statistical
    evidence first, then pass rates, then the cases that moved.  Exit 0.
    """
    before, before_label, _ = _side(base, config, base_model or model)
    now, now_label, now_run = _side(current, config, model)
    before, now = _only(before, suite), _only(now, suite)
    if not before or not now:
        raise CompareError(
            f"nothing to compare: {len(before)} baseline and {len(now)} current attempts"
            + (f" in suite {suite}" if suite else "")
        )
    result = compare(before, now, alpha=alpha)
    with text_report(results):
        for line in render_comparison(result, baseline_label=before_label, current_label=now_label):
            click.echo(line)
    found = from_comparison(result, current_run=now_run)
    write_results(
        results,
        found,
        lambda: compare_json(result, found, baseline_label=before_label, current_label=now_label),
        Host.of_process(),
    )
