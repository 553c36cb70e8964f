"""How large an open tape writer's zstd match-finder tables are.

A writer's zstd stream holds a window (only what its session wrote is touched)
and the match finder's tables, which are cleared when the stream starts, so
they cost their whole size in RSS for as long as the session is open.  Large
tables find repeats far back in a long session: in a 500-turn coding-agent
session, where later tool results repeat files read hundreds of turns before,
2^19 entries (about 2.5 MiB) give a tape 9% smaller than 2^17 (about 1 MiB),
and 2^17 is what 25-turn sessions need (evals/perf/bench_size_sdk.py,
bench_writer_memory.py).  So the first ``large_writers`` writers open in a
process get the large tables and any more get the small ones; a writer gives
its share back when its session ends.  The tables change how well a tape is
compressed, never what it holds.
"""

from __future__ import annotations

import threading

import zstandard

LARGE_LOG = 19
"""Table entries, as a power of 2, of the first writers open in a process."""
SMALL_LOG = 17
"""Table entries, as a power of 2, of every writer past those."""
LARGE_WRITERS = 4
"""How many open writers get ``LARGE_LOG`` (the runner's default concurrency)."""


def capped(params: zstandard.ZstdCompressionParameters, table_log: int) -> dict[str, int]:
    """``params``' hash and chain logs, capped at ``table_log``: at levels that search
    with a binary tree (13 and up), which takes two chain entries a position, the chain
    at ``table_log + 1``, so it reaches as far back as a lower level's chain."""
    tree = params.strategy >= zstandard.STRATEGY_BTLAZY2
    return {
        "hash_log": min(params.hash_log, table_log),
        "chain_log": min(params.chain_log, table_log + 1 if tree else table_log),
    }


class TableBudget:
    """Hands out table sizes to writers as they open; thread-safe."""

    def __init__(
        self,
        *,
        large_writers: int = LARGE_WRITERS,
        large_log: int = LARGE_LOG,
        small_log: int = SMALL_LOG,
    ) -> None:
        if large_log <= small_log:
            raise ValueError("the large tables must be larger than the small ones")
        self.large_log = large_log
        self.small_log = small_log
        self._free = large_writers
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        """How many more writers would get the large tables now."""
        return self._free

    def take(self) -> int:
        """The table log for a writer that opens now; give it back with ``give``."""
        with self._lock:
            if self._free > 0:
                self._free -= 1
                return self.large_log
            return self.small_log

    def give(self, log: int) -> None:
        """Return what ``take`` gave a writer whose session has ended."""
        if log == self.large_log:
            with self._lock:
                self._free += 1


TABLES = TableBudget()
"""The process's budget, shared by every ``SessionWriter``."""
