"""The Markdown job summary: what a person opening the CI run reads first.

GitHub Actions shows the file named by ``GITHUB_STEP_SUMMARY`` on the run's
page; each command appends its own section: the decision, the counts per
kind, and the first cases to look at, each with the exact ``evaltape trace``
command that shows it turn by turn.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._results import RunResults

SEE_ABOVE = re.compile(r" \(see (UNTESTED )?above\)")
"""The text report's pointer to its own lines, which a summary does not have."""

FIRST = 10
"""How many of the cases to look at are listed."""


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell or list item (one line, no pipes)."""
    return " ".join(text.split()).replace("|", "\\|")


def step_summary(results: RunResults, first: int = FIRST) -> str:
    """The Markdown section of ``results``, ending with a newline."""
    icon = "✅" if results.exit_code == 0 else "❌"
    run = f" · run `{results.run_id}`" if results.run_id else ""
    lines = [
        f"### {icon} evaltape {results.command}: {_cell(SEE_ABOVE.sub('', results.decision))}",
        "",
        f"exit code {results.exit_code}{run} · {len(results.cases)} case(s) and model(s)",
        "",
        "| kind | cases |",
        "|---|---:|",
    ]
    lines += [f"| {k.value} | {n} |" for k, n in results.counts.items() if n]
    if results.untested:
        lines += ["", "**Could not be tested:**", ""]
        lines += [f"- {_cell(line)}" for line in results.untested]
    problems = results.problems
    if problems:
        lines += ["", f"**First {min(first, len(problems))} of {len(problems)} to look at:**", ""]
        for c in problems[:first]:
            model = f" [{c.model}]" if c.model else ""
            lines.append(
                f"- **{c.kind.value.upper()}** `{c.suite}/{c.case_id}`{model}: {_cell(c.reason)}"
            )
            if c.trace:
                lines.append(f"  - inspect: `{c.trace}`")
    return "\n".join(lines) + "\n\n"


def append_step_summary(path: Path, results: RunResults) -> None:
    """Append the section of ``results`` to the summary file (created if missing)."""
    with path.open("a", encoding="utf-8") as out:
        out.write(step_summary(results))
