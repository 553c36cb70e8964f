"""``evaltape compare BASE CURRENT``: the regression report for two finished runs.

Either side is a run (``latest``, a run id or unique prefix, a record file)
or a saved baseline (``baseline:NAME``).  The comparison is paired on the
cases both ran, with the model each side ran; nothing runs and nothing is
written.  It reports, it does not decide: the exit code is 0 whatever the
result (``evaltape live --gate`` is the decision), but it prints what the gate
decides on the same attempts beside the test, so the two never disagree
silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import click

from .._config import Config, display_path
from .._errors import ScoringError
from ..outputs.console._compare import render_comparison
from ..outputs.formats import compare_json, from_comparison
from ..results import _baselines as baselines
from ..results._record_files import read_record, resolve_run
from ..results._records import AttemptResult, RunRecord
from ..run._host import Host
from ..verdicts._compare import compare
from ..verdicts._compare_gate import gate_block
from ._boundary import boundary
from ._gate_flow import folder
from ._options import PROBABILITY, ResultFiles, config_options, result_options
from ._results_out import text_report, write_results

BASELINE_PREFIX = "baseline:"


class CompareError(ScoringError):
    """The two sides cannot be compared as asked."""


@attrs.frozen(kw_only=True)
class _Side:
    attempts: list[AttemptResult]
    label: str
    record: RunRecord | None = None


def _side(spec: str, config: Config, model: str | None) -> _Side:
    """The attempts ``spec`` names, for one model, a label for the report, and its record."""
    if spec.startswith(BASELINE_PREFIX):
        b = baselines.load(folder(config), spec[len(BASELINE_PREFIX) :])
        if model is not None and b.model != model:
            raise CompareError(f'baseline "{b.name}" ran with model {b.model}, not {model}')
        return _Side(attempts=list(b.attempts), label=f'baseline "{b.name}"')
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
    return _Side(
        attempts=[a for a in record.attempts if a.model == chosen],
        label=f"run {record.run_id}{commit}",
        record=record,
    )


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
    type=PROBABILITY,
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
    evidence first, then pass rates, then the cases that moved, then what
    the gate decides on the same attempts.  Exit 0.
    """
    before = _side(base, config, base_model or model)
    now = _side(current, config, model)
    before = attrs.evolve(before, attempts=_only(before.attempts, suite))
    now = attrs.evolve(now, attempts=_only(now.attempts, suite))
    if not before.attempts or not now.attempts:
        raise CompareError(
            f"nothing to compare: {len(before.attempts)} baseline and {len(now.attempts)} "
            "current attempts" + (f" in suite {suite}" if suite else "")
        )
    result = compare(before.attempts, now.attempts, alpha=alpha)
    with text_report(results):
        for line in render_comparison(result, baseline_label=before.label, current_label=now.label):
            click.echo(line)
        gate = gate_block(
            before.attempts, now.attempts, alpha=alpha, record=now.record,
            base_run=before.record.run_id if before.record else "",
            results=config.results, folder=folder(config),
        )  # fmt: skip
        for line in gate:
            click.echo(line)
    found = from_comparison(result, current_run=now.record.run_id if now.record else "")
    write_results(
        results,
        found,
        lambda: compare_json(result, found, baseline_label=before.label, current_label=now.label),
        Host.of_process(),
    )
