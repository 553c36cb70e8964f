"""How ``evaltape coverage`` prints what the recordings can catch: per suite a table per tool,
one per case, a sentence per tool and the verdict; then the mutations, if any were planted."""

from __future__ import annotations

from collections.abc import Sequence

from ...run._coverage import CoverageOutcome
from ...run.mutate._mutants import MutationOutcome
from ...verdicts._coverage import SuiteCoverage


def _aligned(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        first = row[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1], strict=True)]
        out.append((indent + "  ".join([first, *rest, row[-1]])).rstrip())
    return out


def suite_lines(s: SuiteCoverage) -> list[str]:
    """One suite: its tools, its cases, a sentence per tool."""
    lines = [f"suite {s.suite}: {s.attempts} recorded attempt(s), {s.passing} pass today"]
    tools: list[tuple[str, ...]] = [
        ("tool", "calls", "passing", "unchecked", "failing", "unseen", "state")
    ]
    for t in s.tools:
        tools.append(
            (t.tool, str(t.calls), str(t.passing), str(t.unchecked), str(t.failing),
             str(t.unseen), t.state.value)
        )  # fmt: skip
    lines += _aligned(tools)
    cases: list[tuple[str, ...]] = [("case", "attempts", "pass", "outcome check", "tools called")]
    for c in s.cases:
        called = ", ".join(f"{name} x{n}" for name, n in c.tools) or "-"
        check = "yes" if c.outcome_checked else "no"
        cases.append((c.case_id, str(c.attempts), str(c.passing), check, called))
    lines += _aligned(cases)
    lines += [f"  {t.line}" for t in s.tools]
    return lines


def mutation_lines(m: MutationOutcome) -> list[str]:
    """The mutation score, then one line per mutation: caught (by what) or MISSED (why)."""
    lines = [
        f"mutations of {m.agent}: {m.caught} of {len(m.results)} caught "
        f"(mutation score {m.score:.0%})"
    ]
    for r in m.results:
        if r.caught:
            more = f" (+{len(r.by) - 1} more)" if len(r.by) > 1 else ""
            lines.append(f"  caught  {r.mutation.label} — by {r.by[0]}{more}")
        else:
            why = r.note or f"{r.replayed} attempt(s) replayed unchanged"
            lines.append(f"  MISSED  {r.mutation.label} — {why}")
    return lines


def coverage_lines(outcome: CoverageOutcome) -> list[str]:
    """Everything ``evaltape coverage`` prints on stdout, verdict lines last."""
    c = outcome.coverage
    lines = [f"coverage of {c.attempts} recorded attempt(s) in {len(outcome.tapes)} tape(s)"]
    for s in c.suites:
        lines += ["", *suite_lines(s)]
    if outcome.mutants is not None:
        lines += ["", *mutation_lines(outcome.mutants)]
    lines.append("")
    lines += [f"verdict {s.verdict}" for s in c.suites] or ["verdict: no recorded attempt"]
    return lines
