"""``evaltape validate``: check suite files without running anything."""

from __future__ import annotations

from typing import NoReturn

import click

from .._config import Config, display_path, scorer_names
from ..cases._cases import CaseError, CaseKind, Problem, Suite
from ..cases._load import load_suites
from ._options import config_options


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def report_problems(problems: tuple[Problem, ...]) -> NoReturn:
    """Print every problem as ``path:line: message``, a count, and exit 2."""
    for problem in problems:
        click.echo(str(problem), err=True)
    files = len({p.path for p in problems})
    click.echo(
        f"evaltape: {_plural(len(problems), 'problem')} in {_plural(files, 'file')}; "
        "nothing was run",
        err=True,
    )
    raise SystemExit(2)


def load_or_report(paths: tuple[str, ...], config: Config) -> tuple[Suite, ...]:
    """Load ``paths`` (default: the configured suites folder) or report and exit 2."""
    targets = paths or (display_path(config.suites),)
    try:
        names, where = scorer_names(config)
        return load_suites(
            targets, rubrics_dir=display_path(config.rubrics), scorers=names, scorers_from=where
        )
    except CaseError as exc:
        report_problems(exc.problems)


EXAMPLE = """\b
Example:
  evaltape validate evals/
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Check suite files (PATHS: files or folders; default the suites folder).",
    epilog=EXAMPLE,
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@config_options("suites", "rubrics", "scorers")
def validate(paths: tuple[str, ...], config: Config) -> None:
    """Check suite files (PATHS: files or folders; default the suites folder).

    Prints every problem of every file as FILE:LINE: MESSAGE and exits 2, or
    prints a summary and exits 0.  No agent or model is called.
    """
    suites = load_or_report(paths, config)
    cases = [case for suite in suites for case in suite.cases]
    counts = ", ".join(
        f"{sum(1 for c in cases if c.kind is kind)} {kind.value}" for kind in CaseKind
    )
    click.echo(f"{_plural(len(suites), 'suite')}, {_plural(len(cases), 'case')} OK ({counts})")
