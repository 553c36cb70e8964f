"""Planning: which jobs a run has and which tape each one's session goes to."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from evaltape.recorder import RecordedSession
from evaltape.recorder._shared import PackedSession

from ..cases._cases import Case, Suite
from ..results._records import RunKind
from ._jobs import Job


def cassette_tape(cassettes: Path, case: Case) -> tuple[Path, str]:
    """``<cassettes>/<suite>/<case id>.tape`` and its label relative to ``cassettes``."""
    label = f"{case.suite}/{case.id}.tape"
    return cassettes / label, label


AttemptKey = tuple[str, str, int]
"""(case id, model, attempt index): what identifies a recorded attempt across runs."""


def plan_live(
    suites: Sequence[Suite],
    models: Sequence[str],
    trials: int,
    results: Path,
    run_id: str,
    only: Collection[AttemptKey] = (),
) -> tuple[Job, ...]:
    """Every live job: model x case x attempt; a case pinning a model runs only with it.

    Each session goes to the run's own tape under ``results`` (``run_tape``);
    ``only``, when given, keeps just those attempts.
    """
    jobs: list[Job] = []
    seen: set[tuple[str, str, int]] = set()
    for model in models:
        for suite in suites:
            for case in suite.cases:
                chosen = case.model or model
                for attempt in range(trials):
                    key = (case.id, chosen, attempt)
                    if key in seen or (only and key not in only):
                        continue
                    seen.add(key)
                    tape, label = run_tape(results, run_id, case)
                    jobs.append(
                        Job(
                            case=case,
                            model=chosen,
                            attempt=attempt,
                            mode=RunKind.LIVE,
                            tape=tape,
                            tape_label=label,
                            run_id=run_id,
                        )
                    )
    return tuple(jobs)


def run_tape(results: Path, run_id: str, case: Case) -> tuple[Path, str]:
    """``<results>/tapes/<run id>/<suite>/<case id>.tape`` and its label relative to results."""
    label = f"tapes/{run_id}/{case.suite}/{case.id}.tape"
    return results / label, label


def plan_replay(
    recorded: Iterable[tuple[Case, RecordedSession]],
    results: Path,
    run_id: str,
    *,
    packed: Mapping[str, PackedSession] | None = None,
) -> tuple[Job, ...]:
    """One replay job per recorded session, writing under the results folder; ``packed``
    (by session id) is each session still compressed, what is shipped to another process."""
    jobs = []
    packs = packed or {}
    for case, session in recorded:
        tape, label = run_tape(results, run_id, case)
        jobs.append(
            Job(
                case=case,
                model=session.header.model,
                attempt=session.header.attempt,
                mode=RunKind.REPLAY,
                tape=tape,
                tape_label=label,
                run_id=run_id,
                recorded=session,
                packed=packs.get(session.session_id),
            )
        )
    return tuple(jobs)
