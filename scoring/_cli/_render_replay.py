"""How ``evaltape replay`` prints a ``ReplayOutcome``: changes, the scoreboard, the judge."""

from __future__ import annotations

import click

from evaltape.recorder import Usage
from evaltape.scoring.cost._costs import cost_line
from evaltape.scoring.cost._costs import total as costs_total
from evaltape.scoring.cost._pricing import Prices, built_in_prices
from evaltape.scoring.judge._judge import (
    DEFAULT_FLOORS,
    Floors,
    Judge,
    JudgeState,
    JudgeStatus,
    case_floors,
    judge_status,
)
from evaltape.scoring.run._pool import PoolOutcome
from evaltape.scoring.verdicts._replaycheck import Change, scoreboard


def print_report(
    outcome: PoolOutcome,
    floors: Floors = DEFAULT_FLOORS,
    judge: Judge | None = None,
    *,
    prices: Prices | None = None,
) -> JudgeStatus:
    """Regressions, improvements and stale recordings, the scoreboard per suite, the judge.

    As in ``evaltape live``: each judged case and model gets its floor
    decision, a judge asked live (``--allow-live-judge``) gets a line with its
    tokens, and the last line is ``judge_status: ...``.  Returns that status.
    """
    labelled = {
        Change.REGRESSION: "REGRESSION",
        Change.IMPROVEMENT: "improvement",
        Change.STALE: "STALE",
    }
    for change, word in labelled.items():
        for r in outcome.results:
            d = r.decision
            if d is None or d.change is not change:
                continue
            j = r.job
            where = f"{j.case.suite}/{j.case.id} {j.model} (attempt {j.attempt + 1})"
            if change is Change.STALE:
                why = d.detail
            elif change is Change.REGRESSION:
                why = f"recorded: pass; replayed: {d.replayed.reason if d.replayed else ''}"
            else:
                why = f"recorded: {d.rescored.reason}; replayed: pass"
            click.echo(f"{word} {where}: {why}")
    rows = [(r.job.case.suite, r.job.case.id, r.decision) for r in outcome.results if r.decision]
    header = ("suite", "cases", "attempts", "rescored", "replayed", "regress", "improve", "stale")
    table = [header]
    for b in scoreboard((s, c, d) for s, c, d in rows if d is not None):
        table.append(
            (
                b.suite,
                str(b.cases),
                str(b.attempts),
                f"{b.rescored_passed}/{b.attempts}",
                f"{b.replayed_passed}/{b.attempts}",
                str(b.regressions),
                str(b.improvements),
                str(b.stale),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        click.echo("  ".join(cells))
    tokens = sum(r.usage.total_tokens for r in outcome.results)
    asked = [
        r.judgement
        for r in outcome.results
        if r.judgement is not None
        and not r.judgement.recorded
        and r.judgement.state in (JudgeState.SCORED, JudgeState.UNSCORED)
    ]
    spent = "" if asked else "$0.00 spent; "
    click.echo(f"{spent}{tokens:,} tokens of recorded model calls replayed")
    recorded = costs_total(r.cost for r in outcome.results)
    vintage = prices if prices is not None else built_in_prices()
    click.echo(f"what they cost when recorded: {cost_line(recorded, vintage, 'recorded')}")
    trials = ((r.job.case.id, r.job.model, r.judgement) for r in outcome.results)
    for case_id, model, check in case_floors(trials, floors):
        word = "PASS" if check.passed else "FAIL"
        click.echo(f"judged {case_id} [{model}]: {word} {check.detail}")
    reused = sum(1 for r in outcome.results if r.judgement is not None and r.judgement.recorded)
    if judge is not None:
        grading = sum((r.judge_usage for r in outcome.results), Usage())
        click.echo(
            f"grading by {judge.who}: {len(asked)} asked live, {reused} recorded verdicts "
            f"reused · {grading.total_tokens:,} tokens ({grading.input_tokens:,} in, "
            f"{grading.output_tokens:,} out), not counted above"
        )
    status = judge_status(r.judgement for r in outcome.results)
    click.echo(f"judge_status: {status.value}")
    return status
