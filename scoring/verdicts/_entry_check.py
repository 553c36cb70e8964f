"""The entry check: a new or edited case runs three times before it joins the gate.

A case that lands near a 0.93 pass rate is a bad case, not a hard task: it
will flip the gate on noise.  So before a case counts, it runs exactly
``ENTRY_TRIALS`` times on its own and its attempts must agree.  A split is
flagged as a bad case (make it near-deterministic: tighten the prompt or
loosen the check); three failures are reported as failing (a real finding or
a broken case); three passes mean it is ready.

A case needs the check when no live attempt in the history was judged under
its current fingerprint: it is new (never run) or edited (run only under
older definitions).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

import attrs

from ..cases._cases import Case, Suite
from ..results._records import AttemptResult, RunRecord, Verdict
from ._quarantine import judged

ENTRY_TRIALS = 3
"""Attempts per case in an entry check."""

ENTRY_PURPOSE = "entry_check"
"""``RunRecord.purpose`` of an entry-check run."""

EXIT_BAD_CASE = 1
"""Exit status of ``evaltape live --entry-check`` when a case is bad or could not be checked."""


class Novelty(enum.Enum):
    """Why a case needs the entry check."""

    NEW = "new"
    """No live attempt of the case id was ever judged."""
    EDITED = "edited"
    """Judged before, but only under an older definition."""


@attrs.frozen(kw_only=True)
class Candidate:
    """A case selected for the entry check."""

    case: Case
    """The case as it is now."""
    novelty: Novelty
    """New or edited."""


def select_unchecked(
    suites: Sequence[Suite], records: Iterable[RunRecord]
) -> tuple[tuple[Suite, ...], tuple[Candidate, ...]]:
    """The suites pruned to the cases no judged live attempt covers, and why each was kept.

    ``records`` are live run records (``history_records``); suites left with
    no case are dropped.
    """
    seen_ids: set[tuple[str, str]] = set()
    seen_prints: set[tuple[str, str, str]] = set()
    for record in records:
        for a in record.attempts:
            if judged(a):
                seen_ids.add((a.suite, a.case_id))
                seen_prints.add((a.suite, a.case_id, a.fingerprint))
    chosen: list[Suite] = []
    candidates: list[Candidate] = []
    for suite in suites:
        kept = []
        for case in suite.cases:
            if (case.suite, case.id, case.fingerprint) in seen_prints:
                continue
            known = (case.suite, case.id) in seen_ids
            candidates.append(
                Candidate(case=case, novelty=Novelty.EDITED if known else Novelty.NEW)
            )
            kept.append(case)
        if kept:
            chosen.append(attrs.evolve(suite, cases=tuple(kept)))
    return tuple(chosen), tuple(candidates)


class EntryVerdict(enum.Enum):
    """The outcome of one case's entry check with one model."""

    READY = "ready"
    """Every attempt passed: the case may join the gate."""
    BAD = "bad case"
    """The attempts split: make the case near-deterministic before it joins the gate."""
    FAILING = "failing"
    """Every attempt failed: a real finding or a broken case."""
    NOT_CHECKED = "not checked"
    """Some attempts could not be judged and the rest agree: no verdict."""


@attrs.frozen(kw_only=True)
class EntryResult:
    """One case's entry check with one model."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    passed: int
    """Judged attempts that passed."""
    judged: int
    """Attempts judged (passed or failed, evidence sound)."""
    total: int
    """Attempts run."""
    verdict: EntryVerdict
    """Ready, bad, failing or not checked."""


def entry_results(attempts: Iterable[AttemptResult]) -> tuple[EntryResult, ...]:
    """Group an entry-check run's attempts by case and model and judge each group."""
    groups: dict[tuple[str, str, str], list[AttemptResult]] = {}
    for a in attempts:
        groups.setdefault((a.suite, a.case_id, a.model), []).append(a)
    results = []
    for (suite, case_id, model), group in groups.items():
        clean = [a for a in group if judged(a)]
        passed = sum(1 for a in clean if a.verdict is Verdict.PASSED)
        if 0 < passed < len(clean):
            verdict = EntryVerdict.BAD
        elif len(clean) < len(group) or not clean:
            verdict = EntryVerdict.NOT_CHECKED
        elif passed == len(clean):
            verdict = EntryVerdict.READY
        else:
            verdict = EntryVerdict.FAILING
        results.append(
            EntryResult(
                suite=suite,
                case_id=case_id,
                model=model,
                passed=passed,
                judged=len(clean),
                total=len(group),
                verdict=verdict,
            )
        )
    return tuple(results)


def render_selection(candidates: Sequence[Candidate]) -> list[str]:
    """One line per selected case: ``entry check: suite/case (new)``."""
    return [f"entry check: {c.case.suite}/{c.case.id} ({c.novelty.value})" for c in candidates]


def render_entry_results(results: Sequence[EntryResult]) -> list[str]:
    """One line per case and model, then a summary line."""
    lines = []
    for r in results:
        name = f"{r.suite}/{r.case_id} [{r.model}]"
        score = f"{r.passed}/{r.judged}"
        if r.verdict is EntryVerdict.BAD:
            lines.append(
                f"bad case: {name} {score} — make it near-deterministic before it joins the gate"
            )
        elif r.verdict is EntryVerdict.FAILING:
            lines.append(f"failing: {name} {score} — a real finding or a broken case")
        elif r.verdict is EntryVerdict.READY:
            lines.append(f"ready: {name} {score}")
        else:
            lines.append(
                f"not checked: {name} {score}, {r.total - r.judged} of {r.total} attempts "
                f"could not be judged — fix the cause, then run "
                f"`evaltape live --cases {r.case_id} --trials {ENTRY_TRIALS}`"
            )
    counts = {v: sum(1 for r in results if r.verdict is v) for v in EntryVerdict}
    lines.append("entry check: " + ", ".join(f"{counts[v]} {v.value}" for v in EntryVerdict))
    return lines


def entry_exit_code(results: Iterable[EntryResult]) -> int:
    """``EXIT_BAD_CASE`` if any case is bad or could not be checked, else 0."""
    blocking = (EntryVerdict.BAD, EntryVerdict.NOT_CHECKED)
    return EXIT_BAD_CASE if any(r.verdict in blocking for r in results) else 0
