"""The progress renderer of ``evaltape live`` and ``replay``: one line per finished attempt."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO

import click

from ...results._records import AttemptResult, RunKind, Verdict
from ...verdicts._replaycheck import Change


class Progress:
    """``[k/total] model :: case (attempt n) PASS|FAIL|ERROR reason`` per finished attempt.

    On a terminal it also keeps a one-line bar at the bottom; elsewhere only
    the lines are written.
    """

    WIDTH = 30

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self, result: AttemptResult) -> str:
        """The line printed for ``result``.

        A replayed attempt whose recording no longer matched says what the replay
        found (``STALE``, ``CHANGED``) in place of a verdict: a stale recording is
        news about the tape, not a failure of the attempt.
        """
        self.done += 1
        word = {Verdict.PASSED: "PASS", Verdict.FAILED: "FAIL"}.get(result.verdict, "ERROR")
        change = result.change or Change.UNCHANGED.value
        if change in (Change.STALE.value, Change.CHANGED.value):
            word = change.upper()
        elif change != Change.UNCHANGED.value:
            word += f" {change.upper()}"
        text = (
            f"[{self.done}/{self.total}] {result.model} :: {result.case_id} "
            f"(attempt {result.attempt + 1}) {word}"
        )
        return text + (f" {result.reason}" if result.reason else "")

    def __call__(self, result: AttemptResult) -> None:
        text = self.line(result)
        if self.tty:
            filled = self.WIDTH * self.done // max(1, self.total)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self.stream.write(f"\r\x1b[K{text}\n[{bar}] {self.done}/{self.total}")
            if self.done >= self.total:
                self.stream.write("\r\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


class CliReporter:
    """The command line's ``Reporter``: notes and warnings on stderr, a progress line each."""

    def __init__(self, line: Callable[[AttemptResult, int], None] | None = None) -> None:
        self._progress: Progress | None = None
        self._mode: RunKind | None = None
        self._line = line

    def note(self, line: str) -> None:
        """Printed on stderr as it is."""
        click.echo(line, err=True)

    def warning(self, message: str) -> None:
        """``evaltape: warning: message`` on stderr."""
        click.echo(f"evaltape: warning: {message}", err=True)

    def attempt(self, result: AttemptResult, total: int) -> None:
        """One progress line (``line`` when given, else ``Progress``'s)."""
        if self._line is not None:
            self._line(result, total)
            return
        if self._progress is None or result.mode is not self._mode:
            # A new run (``rerecord``'s replay, then its live run) counts from 1 again.
            self._progress = Progress(total)
            self._mode = result.mode
        self._progress.total = total  # the gate's confirmation re-runs add attempts
        self._progress(result)
