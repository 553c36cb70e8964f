"""What reaches the terminal: tape text made safe to print, secrets masked in error lines,
and the exit code a command ends with."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import NoReturn, TextIO, cast

import click

from evaltape.recorder.redact import Redactor, default_redactor, secret_values

EXIT_REFUSED = 2
"""Bad input, found before anything ran (also: refused credentials)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C; finished attempts are kept."""


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``evaltape: error: message`` to stderr (secrets masked) and exit with ``code``."""
    click.echo(f"evaltape: error: {console_safe(message)}", err=True)
    sys.exit(code)


def console_safe(line: str) -> str:
    """``line`` with secrets masked: the built-in rules and this process's key-like
    environment values (the console is a file we write, too)."""
    return default_redactor().extended(values=secret_values(os.environ)).redact_text(line)


class _Masking:
    """A text stream whose every write has its secrets masked first."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.redact_text(text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        if name == "buffer":  # no way around the masking: click then writes text here
            raise AttributeError(name)
        return getattr(self._stream, name)


@contextlib.contextmanager
def masked_console(values: Iterable[str]) -> Iterator[None]:
    """While open, whatever is written to stdout and stderr has its secrets masked: the
    built-in rules, this process's key-like environment values and ``values`` (secrets
    the command was given, e.g. an A/B variant's environment values)."""
    redactor = default_redactor().extended(values=(*secret_values(os.environ), *values))
    out, err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _Masking(out, redactor))
    sys.stderr = cast(TextIO, _Masking(err, redactor))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    return _UNSAFE.sub(_visible, text)
