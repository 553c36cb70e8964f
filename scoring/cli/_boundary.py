"""Where library errors become one line on stderr and an exit code: the CLI's one boundary.

``RunRefused`` (an entry point refused its request before anything ran) is
exit 2, with one ``path:line: message`` per problem of invalid suite files;
so is ``OverBudget`` (a tape that decodes past what a command reads of one tape);
every other expected error is exit 1.  ``interruptible`` turns a Ctrl-C
outside a run's pool into exit 130.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from evaltape.recorder import TapeError
from evaltape.recorder._shared import OverBudget

from .._errors import ScoringError
from ..outputs.console._terminal import EXIT_INTERRUPTED, EXIT_REFUSED, fail
from ..run._setup import RunRefused
from ..sandbox import SandboxError
from .validate import report_problems

P = ParamSpec("P")
R = TypeVar("R")

EXPECTED: tuple[type[Exception], ...] = (TapeError, ScoringError, SandboxError)
"""Exception types that are the user's input, not our bug."""


def boundary(func: Callable[P, R]) -> Callable[P, R]:
    """Turn expected errors raised by a command body into one line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except RunRefused as exc:
            if exc.problems:
                report_problems(exc.problems)
            fail(str(exc), EXIT_REFUSED)
        except SandboxError as exc:  # the machine cannot confine commands: nothing ran
            fail(str(exc), EXIT_REFUSED)
        except OverBudget as exc:  # a tape refused as a whole: bad input, like a refused run
            fail(str(exc), EXIT_REFUSED)
        except EXPECTED as exc:
            fail(str(exc))
        except MemoryError:
            fail("out of memory (a tape or record larger than this machine can hold?)")
        except BrokenPipeError:  # e.g. `evaltape show x | head`
            sys.stderr.close()
            sys.exit(0)

    return wrapper


def _as_ctrl_c(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def interruptible(func: Callable[P, None]) -> Callable[P, None]:
    """A Ctrl-C outside the pool (loading suites, writing the record) exits 130 quietly.

    SIGTERM and SIGHUP are Ctrl-C too, here and (``run._pool``) inside the pool:
    finished attempts are kept and the run record says cancelled.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGHUP):
                previous[signum] = signal.signal(signum, _as_ctrl_c)
        try:
            func(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("evaltape: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    return wrapper
