"""``evaltape.replay.run_sandboxed``, the helper user agents share with verify and bash:
real bubblewrap, real processes, a real 127.0.0.1 listener."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from evaltape.scoring.sandbox import Sandbox, SandboxError, SandboxPolicy, run_sandboxed

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_workspace_is_the_only_writable_path(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "in.txt").write_text("mine\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours\n")
    script = (
        "import pathlib\n"
        f"print(pathlib.Path('in.txt').read_text().strip())\n"
        "pathlib.Path('made.txt').write_text('made')\n"
        f"try:\n    print(open({str(outside)!r}).read())\nexcept OSError as e:\n"
        "    print('read', type(e).__name__)\n"
        "for p in ('/usr/evil', '/etc/evil'):\n"
        "    try:\n        open(p, 'w').close()\n    except OSError:\n"
        "        print('write refused', p)\n"
    )
    result = run_sandboxed(_python(script), workspace=work, timeout=30)
    assert result.confined and result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "mine",
        "read FileNotFoundError",
        "write refused /usr/evil",
        *(["write refused /etc/evil"] if result.output.count("refused") == 2 else []),
    ]
    # /etc inside is the sandbox's own folder: whatever lands there never reaches the host.
    assert not Path("/usr/evil").exists() and not Path("/etc/evil").exists()
    assert (work / "made.txt").read_text() == "made"
    assert outside.read_text() == "not yours\n"


def test_no_network_no_keys_and_the_environment_is_an_allow_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-0123456789abcdefghij")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    script = (
        "import os, socket\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "    print('connected')\nexcept OSError as e:\n    print(type(e).__name__)\n"
        "print(sorted(os.environ))\n"
    )
    try:
        result = run_sandboxed(_python(script), workspace=tmp_path, timeout=30, env={"X": "1"})
    finally:
        server.close()
    lines = result.output.splitlines()
    assert lines[0] == "ConnectionRefusedError"
    assert lines[1] == str(sorted(["HOME", "LANG", "PATH", "PWD", "TMPDIR", "X"]))


@pytest.mark.slow
def test_limits_bind_memory_processes_and_time(tmp_path: Path) -> None:
    policy = SandboxPolicy(memory_bytes=512 << 20, processes=16)
    sandbox = Sandbox.find(policy=policy)
    memory = sandbox.run(_python("bytearray(1 << 30)"), workspace=tmp_path, timeout=30)
    assert memory.exit_code == 1 and "MemoryError" in memory.output
    forks = (
        "import os, time\nn = 0\nfor _ in range(64):\n    try:\n        pid = os.fork()\n"
        "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(2)\n"
        "        os._exit(0)\n    n += 1\nprint(n)\n"
    )
    forked = sandbox.run(_python(forks), workspace=tmp_path, timeout=30)
    assert forked.exit_code == 0, forked.output
    assert int(forked.output.split()[-1]) < 16
    slow = sandbox.run(["sleep", "30"], workspace=tmp_path, timeout=0.5)
    assert slow.timed_out and slow.exit_code == -9


def test_the_sandbox_fails_closed(tmp_path: Path) -> None:
    missing = Sandbox.find({"PATH": str(tmp_path)})
    assert missing.bwrap is None
    assert missing.problem() == "bubblewrap (bwrap) is not installed or not on PATH"
    with pytest.raises(SandboxError, match="bubblewrap"):
        missing.run(["true"], workspace=tmp_path, timeout=5)
    broken = Sandbox(bwrap=shutil.which("false"))
    with pytest.raises(SandboxError, match="the sandbox could not start"):
        broken.run(["true"], workspace=tmp_path, timeout=5)
    assert broken.problem() is not None
    opted_out = Sandbox.unconfined()
    assert opted_out.problem() is None
    result = opted_out.run(["true"], workspace=tmp_path, timeout=5)
    assert result.exit_code == 0 and not result.confined
