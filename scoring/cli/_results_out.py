"""Writing a run's machine-readable results: ``--junit``, ``--json`` and the job summary.

A command renders its text report inside ``text_report(files)`` (which sends
it to stderr when the JSON goes to stdout), then calls ``write_results``.
A file that cannot be written is one error line and exit 2.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from .._config import display_path
from ..outputs.console._exit import EXIT_REFUSED, fail
from ..outputs.formats import RunResults, append_step_summary, junit_xml
from ..run._env import step_summary_path
from ..run._host import Host
from ._options import ResultFiles


@contextlib.contextmanager
def text_report(files: ResultFiles) -> Iterator[None]:
    """While open, the text report goes to stderr if ``--json -`` claimed stdout."""
    if files.json == "-":
        with contextlib.redirect_stdout(sys.stderr):
            yield
    else:
        yield


def _write(path: Path, text: str, what: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"{display_path(path)}: cannot write the {what}: {exc.strerror or exc}", EXIT_REFUSED)


def write_results(
    files: ResultFiles,
    results: RunResults,
    document: Callable[[], dict[str, object]],
    host: Host,
) -> None:
    """Write what ``files`` asks for; the job summary whenever the host's CI names a file."""
    if files.junit is not None:
        _write(files.junit, junit_xml(results), "JUnit XML")
    if files.json is not None:
        text = json.dumps(document(), indent=1, allow_nan=False) + "\n"
        if files.json == "-":
            click.echo(text, nl=False)
        else:
            _write(Path(files.json), text, "JSON outcome")
    summary = step_summary_path(host) if files.step_summary else None
    if summary is not None:
        try:
            append_step_summary(summary, results)
        except OSError as exc:
            fail(
                f"{display_path(summary)} ($GITHUB_STEP_SUMMARY): cannot append the job "
                f"summary: {exc.strerror or exc}",
                EXIT_REFUSED,
            )


def exit_code_of(render: Callable[[], int]) -> int:
    """Run a renderer that returns an exit code or exits with one; return that code."""
    try:
        return render()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
