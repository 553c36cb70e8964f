"""Quarantine proposals from history: observed pass rates, never opinion.

The report reads the run records the history index lists and, per case and
model, counts how often the case passed under its *current* definition.  It
proposes; it never edits a suite file, because a gate that quarantines its
own failures always passes.

Which attempts count:

- live runs only (entry checks included): a replay serves recorded model
  outputs again and a rescore re-grades recorded sessions, so counting them
  would count the same model samples twice and could never show a case the
  model is unsure about;
- attempts that were judged (passed or failed, evidence not tainted); errors
  and skipped attempts say nothing about the case;
- attempts whose case fingerprint equals the case's fingerprint today.  An
  attempt of an older definition (or of a record too old to carry one) is left
  out and counted apart, so a fixed case is not poisoned by its pre-fix runs.

Known-gap cases are expected to fail; their attempts stay out of the rates and
are listed apart, with what happens today and what passing looks like.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs

from ..cases._cases import Case, KnownGap, Suite
from ..results._history import HistoryEntry, read_history
from ..results._record_files import UnknownRun, read_record, record_path
from ..results._records import AttemptResult, RunKind, RunRecord, Verdict
from ..stats._stats import wilson

COUNTED_KINDS: tuple[RunKind, ...] = (RunKind.LIVE,)
"""Run kinds whose attempts are samples of the model: live only."""


def _since(entries: Sequence[HistoryEntry], spec: str) -> str:
    """The run id ``spec`` names among ``entries``: an id or a unique prefix of one."""
    ids = sorted({e.run_id for e in entries})
    if spec in ids:
        return spec
    matches = [i for i in ids if i.startswith(spec)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UnknownRun(f'--since {spec}: no run "{spec}" in the history')
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise UnknownRun(f"--since {spec}: {len(matches)} runs match ({shown})")


def history_records(
    results: Path,
    *,
    since: str | None = None,
    kinds: Iterable[RunKind] = COUNTED_KINDS,
    on_missing: Callable[[str], None] = lambda message: None,
) -> tuple[RunRecord, ...]:
    """The records of the finished runs of ``kinds`` the history lists, oldest first.

    ``since`` (a run id or unique prefix) keeps that run and those started
    after it (run ids sort by start time).  A history entry whose record file
    is gone is reported to ``on_missing`` and skipped.  A damaged history
    line or record raises ``RecordError`` naming the file and line or field;
    an unknown ``since`` raises ``UnknownRun``.
    """
    entries = read_history(results)
    first = _since(entries, since) if since is not None else ""
    wanted = set(kinds)
    records: list[RunRecord] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.run_id in seen or entry.kind not in wanted or entry.run_id < first:
            continue
        seen.add(entry.run_id)
        path = record_path(results, entry.run_id)
        if not path.is_file():
            on_missing(f"history names run {entry.run_id} but {path} is missing; skipped")
            continue
        records.append(read_record(path))
    return tuple(records)


def judged(a: AttemptResult) -> bool:
    """The attempt says something about the case: passed or failed, evidence sound."""
    return a.verdict in (Verdict.PASSED, Verdict.FAILED) and not a.tainted


class Standing(enum.Enum):
    """What the observed rate of one case with one model suggests."""

    PROPOSE_QUARANTINE = "propose quarantine"
    """Passed sometimes, failed sometimes, and not quarantined: flaky."""
    PROPOSE_RELEASE = "propose release from quarantine"
    """Quarantined, and every counted attempt passed."""
    NEVER_PASSED = "never passed"
    """Every counted attempt failed: a real finding or a broken case, not flakiness."""
    FLAKY_QUARANTINED = "flaky, quarantined"
    """Quarantined and still splitting: stays where it is."""
    STABLE = "stable"
    """Not quarantined and every counted attempt passed."""
    NO_DATA = "no data"
    """No counted attempt under the current definition."""


@attrs.frozen(kw_only=True)
class CaseRate:
    """The observed pass rate of one case with one model, under its current definition."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    passed: int
    """Counted attempts that passed."""
    total: int
    """Counted attempts (judged, current definition)."""
    runs: int
    """Runs that contributed a counted attempt."""
    low: float
    """Lower Wilson 95% bound of the pass rate (0 with no data)."""
    high: float
    """Upper Wilson 95% bound of the pass rate (1 with no data)."""
    older: int = 0
    """Attempts left out because they ran an older definition of the case."""
    not_judged: int = 0
    """Attempts of the current definition left out: error, skipped or tainted."""
    quarantined: bool = False
    """The case is quarantined today."""
    known_gap: KnownGap | None = None
    """The case's known gap today; None for an ordinary case."""

    @property
    def standing(self) -> Standing:
        """What the rate suggests (a known gap has no standing: see ``QuarantineReport``)."""
        if self.total == 0:
            return Standing.NO_DATA
        if self.passed == 0:
            return Standing.NEVER_PASSED
        if self.passed == self.total:
            return Standing.PROPOSE_RELEASE if self.quarantined else Standing.STABLE
        return Standing.FLAKY_QUARANTINED if self.quarantined else Standing.PROPOSE_QUARANTINE


@attrs.frozen(kw_only=True)
class QuarantineReport:
    """Every case's observed rate, the proposals they imply, and what was left out."""

    runs: tuple[str, ...]
    """Run ids read, oldest first."""
    rates: tuple[CaseRate, ...]
    """Ordinary cases, per case and model, in suite order."""
    known_gaps: tuple[CaseRate, ...]
    """Known-gap cases, counted the same way but kept out of the rates."""
    older: int
    """Attempts left out because their case was edited since they ran."""
    gone: int
    """Attempts of cases no loaded suite defines any more."""

    def with_standing(self, standing: Standing) -> tuple[CaseRate, ...]:
        """The ordinary cases whose rate has ``standing``."""
        return tuple(r for r in self.rates if r.standing is standing)


@attrs.frozen
class _Tally:
    passed: int = 0
    total: int = 0
    older: int = 0
    not_judged: int = 0
    runs: frozenset[str] = frozenset()


def quarantine_report(
    suites: Sequence[Suite], records: Iterable[RunRecord], *, model: str | None = None
) -> QuarantineReport:
    """Count every attempt of ``records`` against the cases of ``suites`` as they are now.

    ``model`` keeps only that model's attempts.  Pure: reads nothing, edits nothing.
    """
    cases: dict[tuple[str, str], Case] = {(c.suite, c.id): c for s in suites for c in s.cases}
    tallies: dict[tuple[str, str, str], _Tally] = {}
    run_ids: list[str] = []
    older = gone = 0
    for record in records:
        run_ids.append(record.run_id)
        for a in record.attempts:
            if model is not None and a.model != model:
                continue
            case = cases.get((a.suite, a.case_id))
            if case is None:
                gone += 1
                continue
            key = (a.suite, a.case_id, a.model)
            t = tallies.get(key, _Tally())
            if a.fingerprint != case.fingerprint:
                older += 1
                t = attrs.evolve(t, older=t.older + 1)
            elif not judged(a):
                t = attrs.evolve(t, not_judged=t.not_judged + 1)
            else:
                t = attrs.evolve(
                    t,
                    passed=t.passed + (a.verdict is Verdict.PASSED),
                    total=t.total + 1,
                    runs=t.runs | {record.run_id},
                )
            tallies[key] = t
    order = {key: n for n, key in enumerate(cases)}
    rates: list[CaseRate] = []
    gaps: list[CaseRate] = []
    for (suite, case_id, name), t in sorted(
        tallies.items(), key=lambda item: (order[item[0][:2]], item[0][2])
    ):
        case = cases[(suite, case_id)]
        low, high = wilson(t.passed, t.total)
        rate = CaseRate(
            suite=suite,
            case_id=case_id,
            model=name,
            passed=t.passed,
            total=t.total,
            runs=len(t.runs),
            low=low,
            high=high,
            older=t.older,
            not_judged=t.not_judged,
            quarantined=case.quarantined,
            known_gap=case.known_gap,
        )
        (gaps if case.known_gap is not None else rates).append(rate)
    return QuarantineReport(
        runs=tuple(run_ids), rates=tuple(rates), known_gaps=tuple(gaps), older=older, gone=gone
    )


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _evidence(r: CaseRate) -> str:
    text = f"{r.passed}/{r.total} passed in {r.runs} run(s)"
    if r.total:
        text += f", 95% CI {_pct(r.low)}-{_pct(r.high)}"
    return text


SECTIONS: tuple[tuple[Standing, str], ...] = (
    (Standing.PROPOSE_QUARANTINE, "propose quarantine (passes sometimes, fails sometimes):"),
    (Standing.PROPOSE_RELEASE, "propose release from quarantine (now always passing):"),
    (
        Standing.NEVER_PASSED,
        "never passed (a real finding or a broken case: fix it, do not quarantine it):",
    ),
)
"""The proposal sections of the text report, in order."""


def render_report(report: QuarantineReport) -> list[str]:
    """The text report: a table of rates, then proposals, known gaps and what was left out."""
    lines = [
        f"quarantine report: {len(report.runs)} live run(s) from the history; "
        "replay and rescore runs are not counted (their model outputs come from tapes)"
    ]
    if report.rates:
        lines.append("")
        header = ("case", "model", "runs", "passed", "rate", "95% CI", "status")
        rows = [header] + [
            (
                f"{r.suite}/{r.case_id}" + (" [quarantined]" if r.quarantined else ""),
                r.model,
                str(r.runs),
                f"{r.passed}/{r.total}",
                _pct(r.passed / r.total) if r.total else "-",
                f"{_pct(r.low)}-{_pct(r.high)}" if r.total else "-",
                r.standing.value,
            )
            for r in report.rates
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            lines.append(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
    for standing, title in SECTIONS:
        chosen = report.with_standing(standing)
        if chosen:
            lines.append("")
            lines.append(title)
            lines.extend(f"  {r.suite}/{r.case_id} [{r.model}]: {_evidence(r)}" for r in chosen)
    if report.known_gaps:
        lines.append("")
        lines.append("known gaps (expected to fail; kept out of the rates):")
        for r in report.known_gaps:
            assert r.known_gap is not None
            lines.append(f"  {r.suite}/{r.case_id} [{r.model}]: {_evidence(r)}")
            lines.append(f"    today:  {r.known_gap.notes}")
            lines.append(f"    target: {r.known_gap.target}")
            if r.passed:
                lines.append("    it has passed: check whether the gap is closed")
    lines.append("")
    if report.older:
        lines.append(
            f"older definition: {report.older} attempt(s) left out (their case was edited "
            "since they ran)"
        )
    if report.gone:
        lines.append(f"{report.gone} attempt(s) of cases no suite defines any more left out")
    if not report.rates and not report.known_gaps:
        lines.append("no attempt of a loaded case in the runs read")
    lines.append("proposals only: no suite file was changed")
    return lines


def _rate_json(r: CaseRate) -> dict[str, object]:
    return {
        "suite": r.suite,
        "case": r.case_id,
        "model": r.model,
        "passed": r.passed,
        "total": r.total,
        "runs": r.runs,
        "rate": r.passed / r.total if r.total else None,
        "low": r.low,
        "high": r.high,
        "older_definition": r.older,
        "not_judged": r.not_judged,
        "quarantined": r.quarantined,
    }


def report_to_json(report: QuarantineReport) -> dict[str, object]:
    """The plain-dict form ``quarantine-report --json`` prints."""
    return {
        "runs": list(report.runs),
        "kinds": [k.value for k in COUNTED_KINDS],
        "cases": [{**_rate_json(r), "status": r.standing.value} for r in report.rates],
        "proposals": {
            "quarantine": [
                _rate_json(r) for r in report.with_standing(Standing.PROPOSE_QUARANTINE)
            ],
            "release": [_rate_json(r) for r in report.with_standing(Standing.PROPOSE_RELEASE)],
            "never_passed": [_rate_json(r) for r in report.with_standing(Standing.NEVER_PASSED)],
        },
        "known_gaps": [
            {
                **_rate_json(r),
                "notes": r.known_gap.notes if r.known_gap else "",
                "target": r.known_gap.target if r.known_gap else "",
            }
            for r in report.known_gaps
        ],
        "older_definition": report.older,
        "gone": report.gone,
    }
