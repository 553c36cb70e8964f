"""Running a program with its model SDKs pointed at a ``TapeProxy``.

The program gets the proxy's base URLs in its environment (and in
``{OPENAI_BASE_URL}``-style placeholders of its command line), runs in its
own process group without a shell, and is killed as a whole when it exits or
runs past its timeout; the ends of its output are kept.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

import attrs

from .._process_wait import wait_exit


class PointsSDKs(Protocol):
    """What a program is pointed at: a ``TapeProxy``, or ``RoutedProxies`` (one per provider)."""

    def env(self) -> dict[str, str]:
        """The variables that point the program's SDKs at the proxy."""


TAIL_BYTES = 64 * 1024
"""How much of the end of stdout and stderr a ``ProgramResult`` keeps."""


@attrs.frozen(kw_only=True)
class ProgramResult:
    """How a program run through the proxy ended."""

    argv: tuple[str, ...]
    """The command that ran, placeholders filled in."""
    exit_code: int
    """The exit status; negative for a signal (``-9`` after a timeout kill)."""
    stdout: str
    """The last ``TAIL_BYTES`` of standard output, decoded as UTF-8 (errors replaced)."""
    stderr: str
    """The last ``TAIL_BYTES`` of standard error, likewise."""
    timed_out: bool
    """True if the program was killed for running past its timeout."""
    duration: float
    """Seconds from start to exit."""


def fill_placeholders(argv: Sequence[str] | str, env: Mapping[str, str]) -> tuple[str, ...]:
    """``argv`` (a list, or a string split like a shell would) with ``{NAME}`` filled.

    ``{NAME}`` is replaced by ``env[NAME]`` for each name in ``env``, so
    ``curl {OPENAI_BASE_URL}/chat/completions`` works without a shell.
    Other braces (JSON in an argument) are left alone.
    """
    parts = shlex.split(argv) if isinstance(argv, str) else list(argv)
    out = []
    for part in parts:
        for name, value in env.items():
            part = part.replace("{" + name + "}", value)
        out.append(part)
    return tuple(out)


def _tail(file: IO[bytes]) -> str:
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - TAIL_BYTES))
    return file.read().decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_program(
    argv: Sequence[str] | str,
    *,
    cwd: str | Path,
    proxy: PointsSDKs,
    timeout: float,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ProgramResult:
    """Run a program with its SDKs pointed at ``proxy`` and wait for it.

    The environment is ``env`` (default: this process's) plus
    ``proxy.env()``; ``{OPENAI_BASE_URL}``-style placeholders in ``argv``
    are filled from it.  The program runs in its own process group, which
    is killed as a whole when the program exits (no stray children keep
    talking to the proxy) or when ``timeout`` seconds pass.  No shell is
    involved; pass ``["sh", "-c", "..."]`` for one.
    """
    full_env = dict(os.environ if env is None else env) | proxy.env()
    command = fill_placeholders(argv, full_env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = clock()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        timed_out = False
        try:
            wait_exit(process, timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process.pid)
            process.wait()
        duration = clock() - started
        return ProgramResult(
            argv=command,
            exit_code=process.returncode,
            stdout=_tail(out),
            stderr=_tail(err),
            timed_out=timed_out,
            duration=duration,
        )
