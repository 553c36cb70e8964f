"""The gate's part of ``evaltape live``'s output: decisions, the scoreboard, saved baselines."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..._config import display_path
from ...results._records import RunRecord, Verdict
from ...run._gate_flow import GATE_TRIALS, GateOptions, ModelGate, SavedBaseline
from ...verdicts._gate import GateState
from ._compare import render_comparison
from ._terminal import fail


def report(gates: Sequence[ModelGate], accept: bool) -> int:
    """Print each model's comparison and decision; returns the exit code."""
    code = 0
    for g in gates:
        d = g.decision
        click.echo("")
        if d.comparison is not None:
            for line in _render(g):
                click.echo(line)
        for line in d.reasons:
            click.echo(f"  closed: {line}")
        for line in d.notes:
            click.echo(f"  note: {line}")
        word = {
            GateState.OPEN: "OPEN",
            GateState.CLOSED: "CLOSED",
            GateState.RUN_ZERO: "OPEN",
            GateState.NO_BASELINE: "NOT GATED",
        }
        zero = {GateState.RUN_ZERO: " (run zero)", GateState.NO_BASELINE: " (no baseline)"}.get(
            d.state, ""
        )
        if d.state is GateState.CLOSED and accept:
            click.echo(
                f"gate [{g.model}]: CLOSED, accepted with --accept-baseline: "
                f"{len(d.reasons)} reason(s) above; this run becomes the baseline"
            )
            continue
        click.echo(f"gate [{g.model}]: {word[d.state]}{zero}")
        code = max(code, d.exit_code)
    return code


def _render(g: ModelGate) -> list[str]:
    assert g.decision.comparison is not None
    return render_comparison(
        g.decision.comparison, baseline_label=g.against, current_label="this run"
    )


def print_scoreboard(record: RunRecord) -> None:
    """Per model, cases credited (all 3 attempts passed) out of cases run; splits listed."""
    click.echo("")
    click.echo(f"scoreboard ({GATE_TRIALS} trials per case; credit only when all pass):")
    for model in record.models:
        cases: dict[tuple[str, str], list[int]] = {}
        for a in record.attempts:
            if a.model != model or not a.verdict.judged:
                continue
            row = cases.setdefault((a.suite, a.case_id), [0, 0])
            row[0] += a.verdict is Verdict.PASSED
            row[1] += 1
        credited = sum(1 for p, t in cases.values() if p == t == GATE_TRIALS)
        splits = sorted(k for k, (p, t) in cases.items() if 0 < p < t)
        click.echo(f"  {model}: {credited}/{len(cases)} cases credited")
        for suite, case in splits:
            p, t = cases[(suite, case)]
            click.echo(f"    unstable: {suite}/{case} {p}/{t} (a split is not a partial pass)")


def print_saved(
    opts: GateOptions,
    record: RunRecord | None,
    saved: Sequence[SavedBaseline],
    blocked: bool,
    error: str,
) -> None:
    """What ``--save-baseline`` did: the files saved, why nothing was, or exit 2 on an error."""
    if blocked:
        click.echo(
            "evaltape: the gate closed, so this run was not saved as a baseline "
            "(--accept-baseline waves it through)",
            err=True,
        )
    for b in saved:
        click.echo(
            f"baseline {b.name}: saved {display_path(b.latest)} and {display_path(b.dated)}",
            err=True,
        )
    if error:
        fail(error, 2)
