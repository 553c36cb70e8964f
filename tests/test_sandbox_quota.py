"""A sandboxed command cannot fill the disk or the host's temporary folder.

The workspace is the one writable path, so its total size has a quota: a command
that keeps writing is killed once the workspace holds more.  Its output is read
through a pipe into memory, its first and last ``OUTPUT_LIMIT`` bytes kept, never
spooled to a file.  Sizes are counted in bytes; the loops never end by themselves,
so only the quota can stop them (the timeout is a safety net, far away).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from evaltape.scoring.sandbox import Sandbox, SandboxPolicy
from evaltape.scoring.sandbox._sandbox import OUTPUT_LIMIT, workspace_bytes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]

QUOTA = 8 << 20
FILL = "i=0; while :; do head -c 1048576 /dev/zero > f$i || exit 7; i=$((i+1)); done"
"""Writes 1 MiB files for ever (the per-file limit never trips)."""


@pytest.mark.parametrize("confined", [True, False])
def test_a_command_that_fills_the_workspace_is_killed_at_its_quota(
    tmp_path: Path, confined: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    found = Sandbox.find(policy=SandboxPolicy(workspace_bytes=QUOTA))
    sandbox = found if confined else Sandbox.unconfined(policy=SandboxPolicy(workspace_bytes=QUOTA))
    result = sandbox.run(["sh", "-c", FILL], workspace=work, timeout=600)
    assert not result.timed_out
    assert result.exit_code == -9
    assert result.output.endswith(f"[killed: the workspace grew past its {QUOTA}-byte quota]")
    # what it wrote is still there to read (the workspace is a host folder), and over the quota
    assert workspace_bytes(str(work), 1 << 40) > QUOTA
    assert (work / "f0").stat().st_size == 1 << 20


def test_a_command_within_its_quota_is_left_alone(tmp_path: Path) -> None:
    sandbox = Sandbox.find(policy=SandboxPolicy(workspace_bytes=QUOTA))
    result = sandbox.run(
        ["sh", "-c", "head -c 1048576 /dev/zero > f; echo done"], workspace=tmp_path, timeout=600
    )
    assert (result.exit_code, result.output) == (0, "done\n")


def test_output_is_kept_in_memory_first_and_last_bytes_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spool(*args: object, **kwargs: object) -> None:
        raise AssertionError("output must not be spooled to a temporary file")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_spool)
    monkeypatch.setattr(tempfile, "NamedTemporaryFile", no_spool)
    code = (
        "import sys\nw = sys.stdout.buffer.write\nw(b'H' * 100)\n"
        "for _ in range(64):\n    w(b'm' * (1 << 20))\nw(b'T' * 100 + b'END')\n"
    )
    result = Sandbox.find().run([sys.executable, "-c", code], workspace=tmp_path, timeout=600)
    assert result.exit_code == 0
    assert len(result.output) == 2 * OUTPUT_LIMIT + 1
    assert result.output.startswith("H" * 100 + "m")
    assert result.output.endswith("m" + "T" * 100 + "END")
    short = Sandbox.find().run(
        ["sh", "-c", "echo out; echo err >&2"], workspace=tmp_path, timeout=60
    )
    assert short.output == "out\nerr\n"
