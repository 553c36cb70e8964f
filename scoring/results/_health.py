"""Whether a run that says ``running`` still has a driver: its pid and its heartbeat.

A run's record is written by one process, its driver, which stamps the record
with its pid and host name and rewrites it every ``HEARTBEAT`` seconds.  A
driver that was killed (SIGKILL, out of memory, a lost machine) leaves the
record ``running`` for ever; ``run_health`` tells such a run from a live one,
so ``evaltape status`` can say ``crashed`` and offer ``evaltape recover``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from ._history import HEARTBEAT
from ._records import RunRecord, RunState

STALE_AFTER = 6 * HEARTBEAT
"""Seconds without a heartbeat after which a running run counts as crashed (its driver
hung, or ran on another machine that was lost)."""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return True  # no /proc: trust kill(0)
    return state != [b"Z"]


def crash_reason(
    record: RunRecord,
    *,
    now: float,
    alive: Callable[[int], bool] = pid_alive,
    host: str | None = None,
) -> str:
    """Why ``record``'s run is crashed (its driver is gone, or silent for longer than
    ``STALE_AFTER``), or "" when it finished or its driver is alive as far as can be told.

    ``now`` is Unix time; ``alive`` checks a pid on this machine, whose name is ``host``
    (default: this one's).  A record written before heartbeats existed is never judged
    crashed by its age.
    """
    if record.state is not RunState.RUNNING:
        return ""
    here = host if host is not None else socket.gethostname()
    if record.pid is not None and record.host == here and not alive(record.pid):
        return f"its driver (pid {record.pid}) is gone"
    if record.heartbeat_at is not None and now - record.heartbeat_at > STALE_AFTER:
        return f"no heartbeat for {now - record.heartbeat_at:.0f} s (driver pid {record.pid})"
    return ""
