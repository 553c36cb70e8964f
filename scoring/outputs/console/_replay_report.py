"""What ``evaltape replay`` tells a person: the summary first, then what changed, then the
decision in words.

A wall of recorded FAILs is not a broken harness: the report says that each
verdict is the recorded session re-scored today beside the session today's
harness produced, so only a *difference* between the two matters.  Attempts
whose request no longer matched the tape are grouped by what changed and by
distinct edit (one system-prompt edit that touches 84 attempts is one group
with one example diff), each group with what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ...verdicts._replaycheck import (
    Change,
    HarnessChange,
    ReplayDecision,
    replay_exit_code,
    scoreboard,
)


@attrs.frozen(kw_only=True)
class Row:
    """One replayed attempt, as the report needs it."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model the attempt was recorded with."""
    attempt: int
    """0-based attempt index."""
    decision: ReplayDecision
    """Its replay decision."""

    @property
    def where(self) -> str:
        """``suite/case model (attempt N)``."""
        return f"{self.suite}/{self.case_id} {self.model} (attempt {self.attempt + 1})"


NEXT_STEP = {
    Change.CHANGED: "next: the harness now does something else; read the diff and fix the "
    "harness (or accept the new behaviour deliberately). Do not re-record: that would "
    "record the change as the truth.",
    Change.STALE: "next: the model saw different words, so only a live run can say what it "
    "would do: record these sessions live again (evaltape rerecord), then replay.",
}

ASSUMED = {
    Change.UNCHANGED: "unchanged",
    Change.REGRESSION: "REGRESSION",
    Change.IMPROVEMENT: "improvement",
}


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def intro(rows: Sequence[Row], assumed: bool) -> tuple[str, ...]:
    """What was replayed, and how to read the verdicts."""
    cases = len({(r.suite, r.case_id) for r in rows})
    lines = [
        f"replayed {_plural(len(rows), 'recorded attempt')} of {_plural(cases, 'case')} "
        "with today's harness.",
        "rescored = the recorded session scored today; replayed = the session today's "
        "harness produced from the same model outputs. A recorded FAIL that stays FAIL is "
        "unchanged: only a difference points at the harness.",
    ]
    if assumed:
        lines.append(
            "--assume-same-model: where a request no longer matched, the recorded response "
            'was served anyway; "assuming" outcomes are what the attempt would score if the '
            "model answered as recorded, an assumption, not a fact."
        )
    return tuple(lines)


def table(rows: Sequence[Row]) -> tuple[str, ...]:
    """The per-suite scoreboard, aligned."""
    header = (
        "suite",
        "cases",
        "attempts",
        "rescored",
        "replayed",
        "regress",
        "improve",
        "changed",
        "stale",
        "untested",
    )
    cells = [header]
    for b in scoreboard((r.suite, r.case_id, r.decision) for r in rows):
        cells.append(
            (
                b.suite,
                str(b.cases),
                str(b.attempts),
                f"{b.rescored_passed}/{b.attempts}",
                f"{b.replayed_passed}/{b.attempts}",
                str(b.regressions),
                str(b.improvements),
                str(b.changed),
                str(b.stale),
                str(b.untested),
            )
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return tuple(
        "  ".join(
            [row[0].ljust(widths[0])]
            + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        ).rstrip()
        for row in cells
    )


def _assumed(d: ReplayDecision) -> str:
    if d.assumed is None:
        return ""
    why = d.replayed.reason if d.replayed is not None and not d.replayed.passed else ""
    return f"; assuming the model answered as recorded: {ASSUMED[d.assumed]}" + (
        f" ({why})" if why else ""
    )


def _changes(d: ReplayDecision) -> tuple[HarnessChange, ...]:
    return d.changes or ((d.harness,) if d.harness is not None else ())


def _also(r: Row, change: Change) -> str:
    """For a stale edit in an attempt whose harness also changed: say so."""
    if change is Change.STALE and r.decision.change is Change.CHANGED:
        return "; this attempt's harness also changed (see HARNESS CHANGED): not re-recordable"
    return ""


def groups(rows: Sequence[Row], verbose: bool = False) -> tuple[str, ...]:
    """Harness changes, then stale recordings, grouped by what changed and distinct edit.

    An attempt is listed under every change found in it: a prompt edit that came with
    a changed tool shows in both groups, and its stale line says it is not to be
    re-recorded."""
    lines: list[str] = []
    for change, word in ((Change.CHANGED, "HARNESS CHANGED"), (Change.STALE, "STALE")):
        by_label: dict[str, dict[str, list[tuple[Row, HarnessChange]]]] = {}
        for r in rows:
            for h in _changes(r.decision):
                if h.change is change:
                    edits = by_label.setdefault(h.label, {})
                    edits.setdefault(h.edit_key, []).append((r, h))
        for label, edits in by_label.items():
            members = [r for same in edits.values() for r, _ in same]
            attempts = len({id(r) for r in members})
            suites = ", ".join(dict.fromkeys(r.suite for r in members))
            lines.append(
                f"{word} {label} ({_plural(len(edits), 'distinct edit')}): "
                f"{_plural(attempts, 'attempt')}, suite{'s' if ',' in suites else ''} "
                f"{suites}"
            )
            for same in edits.values():
                shown = same if verbose else same[:1]
                for r, h in shown:
                    lead = "  " if verbose else "  e.g. "
                    at = f" (at {h.path})" if h.path else ""
                    lines.append(
                        f"{lead}{r.where}: {h.summary}{at}{_assumed(r.decision)}{_also(r, change)}"
                    )
                lines.extend(f"      {d}" for d in same[0][1].diff)
                if len(same) > 1 and not verbose:
                    lines.append(f"    and {_plural(len(same) - 1, 'more attempt')} with this edit")
            lines.append(f"  {NEXT_STEP[change]}")
            if change is Change.STALE and any(r.decision.change is Change.CHANGED for r in members):
                lines.append(
                    "  (attempts whose harness also changed are not re-recorded: evaltape "
                    "rerecord refuses them unless --accept-harness-changes)"
                )
    return tuple(lines)


def _grouped(rows: Sequence[Row], change: Change) -> tuple[str, ...]:
    """One line per case and model with attempts of ``change``, its trials counted.

    ``REGRESSION suite/case model: 3 of 3 attempts (recorded: pass; replayed: why)``:
    a suite run with three trials shows a broken case once, like a stale edit, with the
    first attempt's reason and how many other reasons there were."""
    runs: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        runs.setdefault((r.suite, r.case_id, r.model), []).append(r)
    lines: list[str] = []
    for (suite, case_id, model), same in runs.items():
        hits = [r for r in same if r.decision.change is change]
        if not hits:
            continue
        if change is Change.REGRESSION:
            word = "REGRESSION"
            why = [r.decision.replayed.reason if r.decision.replayed else "" for r in hits]
            text = f"recorded: pass; replayed: {why[0]}"
        else:
            word = "improvement"
            why = [r.decision.rescored.reason for r in hits]
            text = f"recorded: {why[0]}; replayed: pass"
        others = len(set(why)) - 1
        more = f"; {_plural(others, 'other reason')}, -v lists each attempt" if others else ""
        lines.append(
            f"{word} {suite}/{case_id} {model}: {len(hits)} of "
            f"{_plural(len(same), 'attempt')} ({text}{more})"
        )
    return tuple(lines)


def outcomes(rows: Sequence[Row], verbose: bool = False) -> tuple[str, ...]:
    """Regressions and improvements, one line per case and model with their attempts
    counted (one line per attempt with -v); one line per untested attempt; every
    unchanged attempt with -v."""
    if not verbose:
        grouped = (*_grouped(rows, Change.REGRESSION), *_grouped(rows, Change.IMPROVEMENT))
        untested = (
            f"UNTESTED {r.where}: {r.decision.detail}"
            for r in rows
            if r.decision.change is Change.UNTESTED
        )
        return (*grouped, *untested)
    lines: list[str] = []
    for r in rows:
        d = r.decision
        if d.change is Change.REGRESSION:
            lines.append(
                f"REGRESSION {r.where}: recorded: pass; replayed: "
                f"{d.replayed.reason if d.replayed else ''}"
            )
        elif d.change is Change.IMPROVEMENT:
            lines.append(f"improvement {r.where}: recorded: {d.rescored.reason}; replayed: pass")
        elif d.change is Change.UNTESTED:
            lines.append(f"UNTESTED {r.where}: {d.detail}")
        elif d.change is Change.UNCHANGED:
            word = "pass" if d.rescored.passed else "FAIL"
            lines.append(f"unchanged {r.where}: {word} as recorded and as replayed")
    return tuple(lines)


def decision_line(rows: Sequence[Row], untested: int = 0, errors: int = 0) -> str:
    """The last line: the decision in words, matching the exit code.

    ``untested`` counts what could not be tested outside the rows (unreadable
    tapes, cases with no recording, attempts that could not run): any of it
    makes the replay fail; ``errors`` says how many of those were attempts that
    could not run at all.
    """
    changes = [r.decision.change for r in rows]
    code = replay_exit_code([*changes, *([Change.UNTESTED] if untested else [])])
    count = {c: changes.count(c) for c in Change}
    harness = [r.decision.harness for r in rows if r.decision.change is Change.CHANGED]
    tools = sum(1 for h in harness if h is not None and h.what == "tool result")
    if code == 0:
        better = count[Change.IMPROVEMENT]
        extra = f" ({_plural(better, 'improvement')})" if better else ""
        return f"OK: {_plural(len(rows), 'attempt')} replayed, harness unchanged{extra}"
    if code == 1:
        parts = []
        if count[Change.REGRESSION]:
            parts.append(_plural(count[Change.REGRESSION], "regression"))
        if tools:
            parts.append(_plural(tools, "tool result") + " changed")
        if len(harness) - tools:
            parts.append(_plural(len(harness) - tools, "conversation") + " changed")
        return f"FAIL: {', '.join(parts)} (see above)"
    if code == 2:
        parts = []
        if count[Change.UNTESTED]:
            parts.append(_plural(count[Change.UNTESTED], "attempt") + " could not be tested")
        if errors:
            parts.append(_plural(errors, "attempt") + " could not run (errors)")
        if untested - errors > 0:
            parts.append(_plural(untested - errors, "problem") + " left something untested")
        return f"FAIL: {', '.join(parts)} (see UNTESTED above)"
    return (
        f"STALE: {_plural(count[Change.STALE], 'recording')} stale, the harness's text "
        "changed (see above); nothing else changed"
    )


def report(rows: Sequence[Row], *, verbose: bool = False, assumed: bool = False) -> tuple[str, ...]:
    """Every line of the replay report, in reading order."""
    body = (*groups(rows, verbose), *outcomes(rows, verbose))
    return (*intro(rows, assumed), "", *table(rows), *(("", *body) if body else ()))
