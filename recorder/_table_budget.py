"""How large an open tape writer's zstd match-finder tables are.

A writer's zstd stream holds a window (only what its session wrote is touched)
and the match finder's tables, which are cleared when the stream starts, so
they cost their whole size in RSS for as long as the session is open.  Large
tables find repeats far back in a long session: in a 500-turn coding-agent
session, where later tool results repeat files read hundreds of turns before,
the large tables below (about 4.5 MiB) give a tape 7-10% smaller than the
small ones (about 1.3 MiB), and the small ones are what 25-turn sessions need
(evals/perf/bench_size_sdk.py, bench_writer_memory.py).  So the first
``large_writers`` writers open in a process get the large tables and any more
get the small ones; a writer gives its share back when its session ends.  The
tables change how well a tape is compressed, never what it holds.
"""

from __future__ import annotations

import threading

import attrs


@attrs.frozen
class Tables:
    """Caps on a zstd stream's match-finder tables, as powers of 2 of their entries."""

    hash_log: int
    chain_log: int
    """At levels 16 and up (binary-tree match finders) each position takes 2 entries."""


LARGE = Tables(hash_log=17, chain_log=20)
"""The tables of the first writers open in a process."""
SMALL = Tables(hash_log=16, chain_log=18)
"""The tables of every writer past those."""
LARGE_WRITERS = 4
"""How many open writers get ``LARGE`` (the runner's default concurrency)."""


class TableBudget:
    """Hands out table sizes to writers as they open; thread-safe."""

    def __init__(
        self, *, large_writers: int = LARGE_WRITERS, large: Tables = LARGE, small: Tables = SMALL
    ) -> None:
        if large == small or large.hash_log < small.hash_log or large.chain_log < small.chain_log:
            raise ValueError("the large tables must be larger than the small ones")
        self.large = large
        self.small = small
        self._free = large_writers
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        """How many more writers would get the large tables now."""
        return self._free

    def take(self) -> Tables:
        """The tables for a writer that opens now; give them back with ``give``."""
        with self._lock:
            if self._free > 0:
                self._free -= 1
                return self.large
            return self.small

    def give(self, tables: Tables) -> None:
        """Return what ``take`` gave a writer whose session has ended."""
        if tables == self.large:
            with self._lock:
                self._free += 1


TABLES = TableBudget()
"""The process's budget, shared by every ``SessionWriter``."""
