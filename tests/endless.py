"""A command that runs until it is killed, and a look for the processes left running it.

A test that a timeout kills what a command started runs this command, then asks
which of its processes survived: no wall clock, and a command that was waited
for instead of killed never returns at all.
"""

from __future__ import annotations

import itertools
import os
import select
from collections.abc import Iterable

import attrs

_MADE = itertools.count()


@attrs.frozen
class Endless:
    """``command`` sleeps forever; its argument, unique to one test, finds its processes."""

    command: str
    """``sleep infinity 0.<digits>``: the sum is infinite, the digits name it."""

    @classmethod
    def unique(cls) -> Endless:
        """One whose digits no other test's command has: this process's id, then a count."""
        return cls(command=f"sleep infinity 0.{os.getpid()}{next(_MADE):04d}")

    def pids(self) -> list[int]:
        """The processes whose command line is ``command`` (zombies have none)."""
        wanted = "\0".join(self.command.split()).encode() + b"\0"
        found = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                        if cmdline.read() == wanted:
                            found.append(int(entry.name))
                except OSError:
                    continue  # it ended while we looked
        return found

    def survivors(self) -> list[int]:
        """The processes still running ``command`` once every one already killed has ended
        (``left_running``): none ends unless killed, so these were not killed."""
        return left_running(self.pids())


def left_running(pids: Iterable[int]) -> list[int]:
    """Which of ``pids`` are still running once every one already killed has ended.

    A kill takes a moment to land (a sandbox's processes die with its pid
    namespace, after the sandbox itself is reaped), so each process gets a
    minute to end: far beyond that moment, and only a process that was never
    killed waits it out.  Meant for processes that do not end on their own.
    """
    waiting: dict[int, int] = {}
    for pid in pids:
        try:
            waiting[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            continue
    try:
        while waiting:
            ended, _, _ = select.select(list(waiting), [], [], 60.0)
            if not ended:
                break
            for fd in ended:
                os.close(fd)
                del waiting[fd]
        return sorted(waiting.values())
    finally:
        for fd in waiting:
            os.close(fd)
