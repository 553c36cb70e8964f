"""The gate's confirmation re-runs: a green case that broke is run again before it blocks.

After the planned attempts of a ``--gate`` run, every case the
previously-green rule would close the gate on (green, or all but one trial
passing, in the baseline and no planned trial passing now;
``verdicts._gate_flow.confirmations_needed``) gets up to ``confirm`` more
attempts in the same run, through the same pool and with the same limits,
``CONFIRM_ROUND`` at a time: a case that passes a re-run is not re-run again,
since one pass already keeps it from closing the gate.  They are marked
``confirmation`` in the run record, numbered after the planned trials (so
each has its own seed), and the rule closes the gate only when they all fail
too.  Replay-only runs never get here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..cases._cases import Suite
from ..results._records import RunKind, Verdict
from ..verdicts._gate_green import CONFIRM_ROUND
from ..verdicts._outcomes import CaseKey
from ._finished import PoolOutcome
from ._jobs import Job, JobEnv
from ._plan import run_tape

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


Wanted = Sequence[tuple[str, CaseKey]]
"""(model, (suite, case)) of the cases to confirm."""


def confirm_in_rounds(
    wanted: Wanted,
    pool: PoolOutcome,
    *,
    confirm: int,
    plan: Callable[[Wanted, int, int], tuple[Job, ...]],
    run: RunPool,
    env: JobEnv,
    on_round: Callable[[int, int], None],
) -> PoolOutcome:
    """Re-run ``wanted`` up to ``confirm`` times each, ``CONFIRM_ROUND`` at a time.

    ``plan(cases, done, n)`` builds ``n`` jobs per case numbered after the ``done``
    re-runs already made; ``on_round(cases, jobs)`` is told before each round.  A case
    leaves at its first passing re-run; the rounds end when none is left, ``confirm`` is
    reached, or the pool stops.  Returns the merged outcome.
    """
    done = 0
    left = list(wanted)
    while left and done < confirm:
        n = min(CONFIRM_ROUND, confirm - done)
        jobs = plan(left, done, n)
        if not jobs:
            break
        on_round(len(left), len(jobs))
        after = confirm_broken(jobs, pool, run, env)
        if after is pool:
            break
        pool = after
        done += n
        passed = {
            (r.model, (r.case.suite, r.case.id))
            for r in pool.results
            if r.confirmation and r.record.verdict is Verdict.PASSED
        }
        left = [w for w in left if w not in passed]
    return pool
