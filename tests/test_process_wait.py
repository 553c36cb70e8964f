"""Verify commands and replayed programs are waited for without sleep polling.

``Popen.wait(timeout=...)`` sleeps in a loop; ``wait_exit`` blocks on the
kernel (a pidfd, or a thread in ``waitpid``).  The tests make ``time.sleep``
fail, so any polling shows up as an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaltape.replay._shared import wait_exit


@pytest.fixture(autouse=True)
def no_sleeping(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) while waiting for a process")

    monkeypatch.setattr(time, "sleep", refuse)


@pytest.fixture(params=["pidfd", "thread"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "thread":
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd_open here")
    return str(request.param)


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.slow
def test_an_exit_is_seen_with_its_code(way: str) -> None:
    process = _child("import time; time.sleep(0.3); raise SystemExit(3)")
    assert wait_exit(process, timeout=60) == 3
    assert process.returncode == 3


def test_a_timeout_raises_and_leaves_the_process_running(way: str) -> None:
    process = _child("import time; time.sleep(60)")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_exit(process, timeout=0.2)
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def test_an_already_reaped_process_returns_at_once(way: str) -> None:
    process = _child("pass")
    process.communicate()
    assert wait_exit(process, timeout=1) == 0


def test_a_verify_command_is_waited_for_without_sleeping(tmp_path: Path) -> None:
    from test_outcome import _case, _session

    from evaltape.scoring import score_session

    case = _case(tmp_path, files={"a.txt": "a"}, verify="sleep 0.3; test -f a.txt")
    score = score_session(case, _session({"a.txt": b"a"}))
    assert score.passed, score.reason
    assert score.checks[-1].detail.startswith("verify exited 0")
