"""The gate's confirmation re-runs: a green case that broke is run again before it blocks.

After the planned attempts of a ``--gate`` run, every case the
previously-green rule would close the gate on (green in the baseline, no
planned trial passing now; ``verdicts._gate_flow.confirmations_needed``) gets
``confirm`` more attempts in the same run, through the same pool and with
the same limits.  They are marked ``confirmation`` in the run record, numbered
after the planned trials (so each has its own seed), and the rule closes the
gate only when they fail too.  Replay-only runs never get here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from evaltape.scoring.cases._cases import Suite
from evaltape.scoring.results._records import RunKind
from evaltape.scoring.run._jobs import Job, JobEnv
from evaltape.scoring.run._plan import run_tape
from evaltape.scoring.run._pool import PoolOutcome
from evaltape.scoring.verdicts._outcomes import CaseKey

RunPool = Callable[[Sequence[Job]], PoolOutcome]
"""Runs jobs with the run's pool settings (concurrency, limits, budget, callback)."""


def plan_confirmations(
    wanted: Sequence[tuple[str, CaseKey]],
    suites: Sequence[Suite],
    *,
    trials: int,
    confirm: int,
    results: Path,
    run_id: str,
) -> tuple[Job, ...]:
    """``confirm`` live jobs per (model, (suite, case)), numbered from ``trials`` on."""
    by_key = {(s.name, c.id): c for s in suites for c in s.cases}
    jobs: list[Job] = []
    for model, key in wanted:
        case = by_key.get(key)
        if case is None:  # a baseline case this run no longer has cannot be re-run
            continue
        tape, label = run_tape(results, run_id, case)
        for attempt in range(trials, trials + confirm):
            jobs.append(
                Job(
                    case=case,
                    model=model,
                    attempt=attempt,
                    mode=RunKind.LIVE,
                    tape=tape,
                    tape_label=label,
                    run_id=run_id,
                    confirmation=True,
                )
            )
    return tuple(jobs)


def merged(first: PoolOutcome, then: PoolOutcome) -> PoolOutcome:
    """One outcome for the planned attempts and their confirmation re-runs."""
    return PoolOutcome(
        results=(*first.results, *then.results),
        stopped=then.stopped,
        reason=then.reason,
        not_started=first.not_started + then.not_started,
    )


def confirm_broken(
    jobs: Sequence[Job], pool: PoolOutcome, run: RunPool, env: JobEnv
) -> PoolOutcome:
    """Run the confirmation ``jobs`` after ``pool`` unless it stopped; the merged outcome."""
    if not jobs or pool.stopped is not None or env.stop.is_set():
        return pool
    return merged(pool, run(jobs))
