"""What reaches the terminal: tape text made safe to print, secrets masked in error lines,
and the exit code a command ends with."""

from __future__ import annotations

import os
import re
import sys
from typing import NoReturn

import click

from evaltape.recorder import default_redactor, secret_values

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


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    return _UNSAFE.sub(_visible, text)
