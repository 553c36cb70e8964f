"""How ``evaltape ab`` prints an ``ABOutcome``: verdicts per case, the paired test, tokens."""

from __future__ import annotations

import math

import click

from ..._config import display_path
from ...results._records import AttemptResult, Verdict
from ...run._ab import ABOutcome, variant_of
from ...verdicts._ab import BASELINE, CANDIDATE, Variant, render_cases
from ...verdicts._compare import Comparison
from ._compare import render_comparison
from ._live import tokens


class ABProgress:
    """``[k/total] variant :: case (trial n) PASS|FAIL|ERROR reason`` on stderr."""

    def __init__(self) -> None:
        self.done = 0

    def __call__(self, result: AttemptResult, total: int) -> None:
        self.done += 1
        word = {Verdict.PASSED: "PASS", Verdict.FAILED: "FAIL"}.get(result.verdict, "ERROR")
        text = (
            f"[{self.done}/{total}] {variant_of(result.tape)} :: {result.case_id} "
            f"(trial {result.attempt + 1}) {word}"
        )
        click.echo(text + (f" {result.reason}" if result.reason else ""), err=True)


def _suite_line(c: Comparison) -> str:
    """One plain sentence on the paired suite-level test, in the A/B's terms."""
    t = c.test
    if not t.cases:
        return "suite: no case has counted trials on both sides; nothing to compare"
    p = t.p_two_sided
    ci = "n/a" if math.isnan(t.ci_low) else f"{t.ci_low:+.1f} to {t.ci_high:+.1f}"
    shown = f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"
    if p <= c.alpha and t.effect_points > 0:
        word = "candidate better"
    elif p <= c.alpha and t.effect_points < 0:
        word = "candidate worse"
    else:
        word = "no significant difference"
    return (
        f"suite: {word}: {t.effect_points:+.1f} points (95% CI {ci}), "
        f"two-sided paired p = {shown} over {t.cases} case(s)"
    )


def print_report(outcome: ABOutcome, baseline: Variant, candidate: Variant, alpha: float) -> None:
    """The per-case verdicts, the paired comparison and each side's tokens."""
    click.echo(f"A/B {outcome.run_id}: baseline {baseline.shown}  vs  candidate {candidate.shown}")
    for line in render_cases(outcome.cases, trials=outcome.trials, alpha=alpha):
        click.echo(line)
    click.echo("")
    for line in render_comparison(
        outcome.comparison, baseline_label=BASELINE, current_label=CANDIDATE
    ):
        click.echo(line)
    click.echo(_suite_line(outcome.comparison))
    for name in (BASELINE, CANDIDATE):
        side = outcome.sides[name]
        errors = sum(1 for a in side if a.tainted)
        extra = f", {errors} could not be judged" if errors else ""
        click.echo(f"{name}: {len(side)} attempts{extra} · {tokens(outcome.usage[name])}")
    click.echo(f"judge_status: {outcome.judge_status.value}")
    click.echo("not a gate: no baseline saved, no history line, exit 0 whatever the verdicts")
    click.echo(f"tapes and records: {display_path(outcome.folder)}/", err=True)
