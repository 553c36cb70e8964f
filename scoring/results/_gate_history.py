"""What a gate reads from the history: the baseline pool and the exemption evidence.

**The pool.**  One earlier run is a poor baseline: a lucky one makes every
healthy run after it look worse, and since a blocked run never replaces it the
luck persists.  The gate pools the last ``POOL_RUNS`` baseline-eligible runs of
the same model with the same trials per case (``eligible_runs``): each case's
baseline is its rate over all of them, and the spread of their suite means
tells the paired test how much whole runs drift.

**Exemptions.**  A case that failed every planned trial of an earlier run is
known to fail in streaks, and the previously-green rule leaves it to the
paired test.  Such evidence must not be for sale, so only gated runs the gate
did not block and that were not waved through with ``--accept-baseline``
count (``evidence_run``); an ungated ``live --trials 3`` run or an accepted
run earns no exemption.  Evidence expires: only the last ``EXEMPT_WINDOW`` such
runs are read.  It is spent: one run's evidence exempts the case in one later
run only, and a run in which the case was exempt earns nothing for it, so a
broken case cannot renew its own exemption by failing again.  The run records
say which exemption each run used (``GateInputs.exemptions``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from ._baselines import Prior, eligible_runs
from ._gate_inputs import Exemption
from ._records import RunRecord, Verdict

POOL_RUNS = 3
"""Baseline-eligible runs pooled as a gate's baseline (docs/statistics.md: why 3)."""

EXEMPT_WINDOW = 10
"""Gated runs whose all-failed cases may still exempt a case: older evidence has expired."""

SCAN_LIMIT = 50
"""Eligible runs read at most while filling the pool and the window: a history of many
ungated runs is not read to its start for gated ones."""

EVIDENCE_DECISIONS = frozenset({"open", "run zero", "no baseline"})
"""Gate decisions of a run whose failures may count as evidence of a flaky case."""


@attrs.frozen(kw_only=True)
class GateHistory:
    """The earlier runs one model's gate reads, newest first."""

    pool: tuple[Prior, ...]
    """The baseline runs: eligible, same trials per case, at most ``POOL_RUNS``."""
    passed_over: tuple[Prior, ...]
    """Eligible runs with other trials per case met before the pool was full."""
    gated: tuple[Prior, ...]
    """The history window: gated runs that count as evidence (``evidence_run``)."""


def evidence_run(record: RunRecord) -> bool:
    """The run may earn a case an exemption: gated, not blocked, not accepted."""
    return (
        record.purpose == "gate"
        and record.gate in EVIDENCE_DECISIONS
        and not record.gate_blocked
        and not record.baseline_accepted
    )


def gate_history(
    results: Path,
    model: str,
    *,
    trials: int,
    exclude: str = "",
    before: str = "",
    on_problem: Callable[[str], None] | None = None,
    pool: int = POOL_RUNS,
    window: int = EXEMPT_WINDOW,
) -> GateHistory:
    """The pool and the history window of ``model`` for a run of ``trials`` trials per case.

    ``exclude`` is the run being decided; with ``before`` only runs whose id sorts before
    it are read (a later reading of an older run).
    """
    chosen: list[Prior] = []
    passed: list[Prior] = []
    gated: list[Prior] = []
    read = 0
    for prior in eligible_runs(results, model, exclude=exclude, on_problem=on_problem):
        if before and prior.record.run_id >= before:
            continue
        read += 1
        if read > SCAN_LIMIT:
            break
        if len(chosen) < pool:
            if prior.record.trials == trials:
                chosen.append(prior)
            else:
                passed.append(prior)
        if len(gated) < window and evidence_run(prior.record):
            gated.append(prior)
        if len(chosen) >= pool and len(gated) >= window:
            break
    return GateHistory(pool=tuple(chosen), passed_over=tuple(passed), gated=tuple(gated))


def _all_failed(prior: Prior, fingerprints: Mapping[tuple[str, str], str]) -> set[tuple[str, str]]:
    """Cases that failed every judged planned trial of ``prior`` on their current definition."""
    judged: dict[tuple[str, str], bool] = {}
    for a in prior.attempts:
        key = (a.suite, a.case_id)
        if a.tainted or a.confirmation or a.verdict not in (Verdict.PASSED, Verdict.FAILED):
            continue
        if fingerprints.get(key) and a.fingerprint == fingerprints[key]:
            judged[key] = judged.get(key, False) or a.verdict is Verdict.PASSED
    return {key for key, passed in judged.items() if not passed}


def exemptions(
    gated: Sequence[Prior], model: str, fingerprints: Mapping[tuple[str, str], str]
) -> tuple[Exemption, ...]:
    """The cases exempt now, each with the newest unspent evidence (see the module doc)."""
    spent: set[tuple[str, str, str]] = set()
    exempt_in: set[tuple[str, str, str]] = set()
    for prior in gated:
        for inputs in prior.record.gate_inputs:
            if inputs.model != model:
                continue
            for e in inputs.exemptions:
                spent.add((e.suite, e.case_id, e.run_id))
                exempt_in.add((prior.record.run_id, e.suite, e.case_id))
    found: dict[tuple[str, str], Exemption] = {}
    for prior in gated:  # newest first: the newest evidence is kept
        run_id = prior.record.run_id
        for suite, case in sorted(_all_failed(prior, fingerprints)):
            if (suite, case) in found or (run_id, suite, case) in exempt_in:
                continue
            if (suite, case, run_id) in spent:
                continue
            found[(suite, case)] = Exemption(suite=suite, case_id=case, run_id=run_id)
    return tuple(found[k] for k in sorted(found))
