"""Where library errors become one line on stderr and an exit code."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from evaltape.recorder import TapeError
from evaltape.scoring._errors import ScoringError

P = ParamSpec("P")
R = TypeVar("R")

EXPECTED: tuple[type[Exception], ...] = (TapeError, ScoringError)
"""Exception types that are the user's input, not our bug."""


def fail(message: str, code: int = 1) -> None:
    """Print ``evaltape: error: message`` to stderr and exit with ``code``."""
    click.echo(f"evaltape: error: {message}", err=True)
    sys.exit(code)


def boundary(func: Callable[P, R]) -> Callable[P, R]:
    """Turn expected errors raised by a command body into one line and exit 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except EXPECTED as exc:
            fail(str(exc))
            raise AssertionError("unreachable") from exc
        except BrokenPipeError:  # e.g. `evaltape show x | head`
            sys.stderr.close()
            sys.exit(0)

    return wrapper
