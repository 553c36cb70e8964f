"""How a command ends: its error line on stderr, secrets masked, and its exit code."""

from __future__ import annotations

import os
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
