"""``evaltape bisect GOOD BAD``: the commit that broke a replayed case, via ``git bisect run``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from .._config import Config
from ..outputs.console._progress import CliReporter
from ..run._bisect import BisectRequest, run_bisect
from ..run._host import Host
from ._boundary import boundary, interruptible
from ._options import cases_option, config_options

SEE_ABOVE = re.compile(r" \(see (UNTESTED )?above\)")
"""The replay report's pointer to its own lines, which bisect does not print."""

EXIT_INCONCLUSIVE = 3
"""Skipped commits left several candidates for the first bad commit."""


@click.command(
    name="bisect",
    short_help="Find the harness commit that broke a replayed case (git bisect, replay as oracle).",
    epilog="""\b
Example:
  evaltape bisect v1.2.0 HEAD --cases fix-off-by-one
""",
)
@click.argument("good", metavar="GOOD")
@click.argument("bad", metavar="[BAD]", default="HEAD")
@cases_option
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--tapes",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Replay the tapes in DIR (copied first) instead of the cassettes as committed at BAD.",
)
@config_options("cassettes")
@boundary
@interruptible
def bisect(
    good: str,
    bad: str,
    cases: tuple[str, ...],
    suite: str | None,
    tapes: Path | None,
    config: Config,
) -> None:
    """Find the harness commit that broke a replayed case (git bisect, replay as oracle).

    GOOD is a commit where the replay passes, BAD (default: HEAD) one where
    it shows a regression or a harness change.  git bisect checks out the
    commits between them; at each one `evaltape replay` runs from the
    checked-out tree against the tapes as they are at BAD (or --tapes DIR),
    so the recordings do not move.  A commit whose recording is stale (only
    harness text changed) or that could not be tested is skipped (git bisect
    exit 125).  Prints each step, then the first bad commit and its diff
    summary; the repository is left as it was (git bisect reset).  Exit 0
    when found; 3 when skipped commits leave several candidates; 2 on bad
    input (not a git repository, uncommitted changes, no tapes).
    """
    outcome = run_bisect(
        BisectRequest(
            config=config,
            host=Host.of_process(),
            good=good,
            bad=bad,
            cases=cases,
            suite=suite,
            tapes=tapes,
            reporter=CliReporter(),
        )
    )
    for step in outcome.steps:
        decision = SEE_ABOVE.sub("", step.decision)
        click.echo(f"{step.commit[:12]}  {step.answer:<5}  {decision}")
    if not outcome.first_bad:
        click.echo("the first bad commit could be any of (the others were skipped):")
        for commit in outcome.candidates:
            click.echo(f"  {commit}")
        sys.exit(EXIT_INCONCLUSIVE)
    click.echo(f"first bad commit: {outcome.first_bad}")
    for line in outcome.summary:
        click.echo(f"  {line.strip()}")
