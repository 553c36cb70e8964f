"""A spending limit for a run: new attempts start only while the spent cost is below it."""

from __future__ import annotations

import threading

from ._jobs import JobResult


class Budget:
    """USD a run may spend; ``charge`` is called by the worker as each attempt finishes.

    Charging happens in the worker thread before it takes the next job, so
    with one worker the attempt that reaches the limit is always the last to
    start: the count of attempts not started is deterministic.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.spent = 0.0
        self._lock = threading.Lock()

    def admits(self) -> bool:
        """True while the spent cost is below the limit, or nothing was spent at all: a
        free model (``--price MODEL=0/0``) runs under ``--budget 0``."""
        with self._lock:
            return self.spent < self.limit or self.spent == 0.0

    def charge(self, result: JobResult) -> None:
        """Add what the attempt cost: its model calls and its judge (unknown prices add 0)."""
        spent = (result.cost.cost or 0.0) + (result.judge_cost.cost or 0.0)
        with self._lock:
            self.spent += spent
