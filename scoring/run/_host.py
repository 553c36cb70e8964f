"""What a run reads from the machine, and how it reports as it goes.

``Host`` holds the project folder, the environment, the clock, the entropy
for run ids and the network transport's maker.  An entry point reads them
from its request, never from globals; ``Host.of_process()`` is the one place
that captures this process's (the command line calls it).

``Reporter`` is how an entry point says what it is doing while it runs (one
line per finished attempt, warnings, where traces go).  The default is
``SILENT``: a library caller gets the outcome value and nothing printed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

import attrs
import httpx

from evaltape.recorder.redact import Redactor, default_redactor, secret_values

from .._network import network_transport
from ..results._records import AttemptResult


@attrs.frozen(kw_only=True)
class Host:
    """The machine a run reads: folder, environment, clock, entropy and network."""

    project: Path
    """The project folder: agents are imported from it and its git commit is recorded."""
    environ: Mapping[str, str] = attrs.field(repr=False)
    """The environment: API keys for the agent and the judge, export settings, prices."""
    clock: Callable[[], float]
    """Unix time, for run ids, session headers and run records."""
    entropy: Callable[[int], bytes]
    """Random bytes for run ids."""
    network: Callable[[], httpx.BaseTransport] = network_transport
    """Makes the network transport a live run's attempts share (called once per run)."""

    @classmethod
    def of_process(cls, project: Path | None = None) -> Host:
        """This process's: ``project`` (default the current folder), ``os.environ``, the
        system clock and ``os.urandom``."""
        return cls(
            project=project if project is not None else Path.cwd(),
            environ=dict(os.environ),
            clock=time.time,
            entropy=os.urandom,
        )


def records_redactor(host: Host) -> Redactor:
    """What masks secrets in the files a run writes: the built-in rules plus the
    values of the host environment's key-like variables."""
    return default_redactor().extended(values=secret_values(host.environ))


class Reporter(Protocol):
    """Where an entry point reports while it runs."""

    def note(self, line: str) -> None:
        """A line about the run (its plan, the judge, where traces go)."""

    def warning(self, message: str) -> None:
        """Something the user should know that does not stop the run."""

    def attempt(self, result: AttemptResult, total: int) -> None:
        """One of ``total`` attempts finished; ``result`` is what the run record keeps of it."""


class Silent:
    """A reporter that says nothing."""

    def note(self, line: str) -> None:
        """Dropped."""

    def warning(self, message: str) -> None:
        """Dropped."""

    def attempt(self, result: AttemptResult, total: int) -> None:
        """Dropped."""


SILENT: Reporter = Silent()
"""The default reporter: nothing is printed."""
