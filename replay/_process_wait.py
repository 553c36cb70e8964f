"""Waiting for a child process to exit, with a timeout, without polling.

``subprocess.Popen.wait(timeout=...)`` on POSIX loops over ``waitpid(WNOHANG)``
and ``time.sleep`` with growing delays (up to 50 ms), so a command that exits
is noticed late and the waiting thread wakes up again and again.  Here the
wait blocks on the kernel instead: a pidfd (Linux 5.3+) that becomes readable
when the process exits, or else a helper thread blocked in ``waitpid``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
from typing import Any


def wait_exit(process: subprocess.Popen[Any], timeout: float | None) -> int:
    """``process.wait(timeout)``: its exit code, or ``subprocess.TimeoutExpired``."""
    if process.returncode is not None or timeout is None:
        return process.wait()
    fd = -1
    open_pidfd = getattr(os, "pidfd_open", None)
    if open_pidfd is not None:
        with contextlib.suppress(OSError):
            fd = open_pidfd(process.pid)
    if fd < 0:
        return _wait_in_thread(process, timeout)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if not selector.select(max(0.0, timeout)):
                raise subprocess.TimeoutExpired(process.args, timeout)
    finally:
        os.close(fd)
    return process.wait()  # it has exited: this reaps it at once


def _wait_in_thread(process: subprocess.Popen[Any], timeout: float) -> int:
    done = threading.Event()

    def reap() -> None:
        process.wait()
        done.set()

    threading.Thread(target=reap, daemon=True, name=f"wait-{process.pid}").start()
    if not done.wait(timeout):
        raise subprocess.TimeoutExpired(process.args, timeout)
    return process.wait()
