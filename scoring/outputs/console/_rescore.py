"""How ``evaltape rescore`` prints a rescore: changed verdicts, the summary, the judge."""

from __future__ import annotations

import click

from ...judge._floors import case_floors, judge_check, judge_status
from ...judge._judgement import DEFAULT_FLOORS, Floors, JudgeStatus
from ...run.rescore._rescore import Flip, Rescored, TapesRescored
from ...run.rescore._tapes import flips, summarize


def _where(r: Rescored) -> str:
    return f"{r.case.suite}/{r.case.id} {r.model} (attempt {r.attempt + 1})"


def rescore_judge_status(outcome: TapesRescored) -> JudgeStatus:
    """The judge status of a rescore: from the verdicts it reused (or could not)."""
    return judge_status(r.judgement for r in outcome.rescored)


def print_report(outcome: TapesRescored, floors: Floors = DEFAULT_FLOORS) -> None:
    """Every changed verdict, the per-suite summary, then the judge.

    Each judged attempt gets a ``judge`` line with its check (the reused
    verdict, or why it was not re-judged), each judged case and model its
    floor decision, and the last line is ``judge_status: ...``.
    """
    for r in flips(outcome):
        change = r.flip
        assert change is not None and r.before is not None
        if change is Flip.PASS_TO_FAIL:
            click.echo(f"FLIP pass->fail {_where(r)}: {r.reason}")
        elif change is Flip.FAIL_TO_PASS:
            click.echo(f"FLIP fail->pass {_where(r)}: was: {r.before_reason}")
        else:
            now = r.reason or "passed"
            click.echo(
                f"changed {r.before.value}->{r.verdict.value} {_where(r)}: {now} "
                f"(was: {r.before_reason or r.before.value})"
            )
    header: tuple[str, ...] = (
        "suite",
        "cases",
        "attempts",
        "passed",
        "before",
        "pass->fail",
        "fail->pass",
    )
    skipped_any = any(s.skipped for s in summarize(outcome))
    table: list[tuple[str, ...]] = [(*header, "skipped") if skipped_any else header]
    for s in summarize(outcome):
        before = "-" if s.passed_before is None else f"{s.passed_before}/{s.known_before}"
        row: tuple[str, ...] = (
            s.suite,
            str(s.cases),
            str(s.attempts),
            f"{s.passed}/{s.attempts}",
            before,
            str(s.pass_to_fail),
            str(s.fail_to_pass),
        )
        table.append((*row, str(s.skipped)) if skipped_any else row)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for line in table:
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        click.echo("  ".join(cells))
    for r in outcome.rescored:
        if r.incomplete:
            click.echo(f"incomplete {_where(r)}: {r.reason}")
    for r in outcome.rescored:
        if r.judgement is not None:
            click.echo(f"judge {_where(r)}: {judge_check(r.judgement, floors).detail}")
    trials = ((r.case.id, r.model, r.judgement) for r in outcome.rescored)
    for case_id, model, check in case_floors(trials, floors):
        click.echo(
            f"judged {case_id} [{model}]: {'PASS' if check.passed else 'FAIL'} {check.detail}"
        )
    count = len(outcome.rescored)
    click.echo(
        f"{count} session{'' if count == 1 else 's'} rescored; no agent ran and no model was called"
    )
    click.echo(f"judge_status: {rescore_judge_status(outcome).value}")
