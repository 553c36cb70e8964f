"""The reference agent's file tools stay small on files a hostile tape makes.

A tape's ``bash`` call can make a 1000 MB sparse file (it costs no disk) or a
FIFO; ``read`` and ``grep`` over them must neither hold the file in memory nor
block.  The memory checks run in a child process whose address space is
capped a little above what it uses after importing, so a tool that reads the
whole file fails with MemoryError instead of passing on a big machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals.agent import Workspace  # noqa: E402
from evals.agent._tools import MAX_FILE_BYTES, MAX_GREP_BYTES  # noqa: E402
from evaltape.scoring import answer_headlessly  # noqa: E402

pytestmark = pytest.mark.slow  # subprocesses: the CLI, child processes under limits

SPARSE = 1000 * 1024 * 1024
HEADROOM = 256 * 1024 * 1024


def _tools(root: Path, mode: str = "danger") -> Workspace:
    return Workspace(
        root,
        mode=mode,
        ask=lambda q: answer_headlessly(q, root),
        bash_timeout=5,
        output_limit=8000,
    )


def _sparse(path: Path, size: int, head: bytes = b"needle\n") -> None:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


def _capped(code: str, root: Path) -> str:
    """Run ``code`` (which prints its result) in a child capped at its size plus HEADROOM."""
    prelude = textwrap.dedent(
        f"""\
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from evals.agent import Workspace
        from evaltape.scoring import answer_headlessly
        root = Path({str(root)!r})
        tools = Workspace(root, mode="danger", ask=lambda q: answer_headlessly(q, root),
                          bash_timeout=5, output_limit=8000)
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + {HEADROOM}, vm + {HEADROOM}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_read_of_a_huge_sparse_file_reads_the_first_mebibyte(tmp_path: Path) -> None:
    _sparse(tmp_path / "big.txt", SPARSE)
    out = _capped(
        "r = tools.run('read', {'path': 'big.txt', 'max_lines': 1}); print(r.outcome.value); "
        "print(r.text)",
        tmp_path,
    )
    outcome, first, *_ = out.splitlines()
    assert outcome == "ok"
    assert first == "needle"
    assert f"[read stopped after the first {MAX_FILE_BYTES} of {SPARSE} bytes of big.txt" in out


def test_grep_over_huge_files_stops_at_its_byte_budget(tmp_path: Path) -> None:
    count = MAX_GREP_BYTES // MAX_FILE_BYTES + 3
    (tmp_path / "a.txt").write_bytes(b"line\n" * (MAX_FILE_BYTES // 5 + 2))
    for n in range(count):  # all zeros past the start: binary, skipped, yet read and counted
        _sparse(tmp_path / f"f{n:02d}.txt", SPARSE // 10, head=b"")
    out = _capped(
        "r = tools.run('grep', {'pattern': 'needle'}); print(r.outcome.value); print(r.text)",
        tmp_path,
    )
    assert out.splitlines()[:2] == ["ok", "no matches"]
    size = (MAX_FILE_BYTES // 5 + 2) * 5
    assert f"[a.txt: searched the first {MAX_FILE_BYTES} of {size} bytes]" in out
    assert f"[stopped after scanning {MAX_GREP_BYTES} bytes; narrow path or glob]" in out
    # files past the budget are not opened at all, so none of them is named
    assert f"f{count - 1:02d}.txt" not in out


@pytest.mark.parametrize("tool", ["read", "grep", "edit"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, tool: str) -> None:
    os.mkfifo(tmp_path / "pipe")
    args = {"path": "pipe", "pattern": "x", "old": "a", "new": "b"}
    # run in a child with a timeout, so a tool that blocks on the FIFO fails instead of hanging
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""\
                import sys
                sys.path.insert(0, {str(ROOT)!r})
                from pathlib import Path
                from evals.agent import Workspace
                root = Path({str(tmp_path)!r})
                tools = Workspace(root, mode="danger", ask=lambda q: None,
                                  bash_timeout=5, output_limit=8000)
                r = tools.run({tool!r}, {args!r})
                print(r.outcome.value, r.text, sep="|")
                """
            ),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    if tool == "grep":
        assert out.stdout.strip() == "ok|no matches"
    else:
        assert out.stdout.strip() in {
            "error|error: pipe is not a regular file",
            "error|error: no such file: pipe",
        }


def test_edit_refuses_a_file_past_the_size_limit(tmp_path: Path) -> None:
    _sparse(tmp_path / "big.txt", MAX_FILE_BYTES + 1, head=b"a")
    result = _tools(tmp_path).run("edit", {"path": "big.txt", "old": "a", "new": "b"})
    assert result.outcome.value == "error"
    assert result.text == (
        f"error: big.txt is {MAX_FILE_BYTES + 1} bytes; edit changes files of at most "
        f"{MAX_FILE_BYTES} bytes"
    )


def test_a_device_is_refused(tmp_path: Path) -> None:
    os.symlink("/dev/zero", tmp_path / "zero")
    # /dev/zero resolves outside the workspace: refused before it is looked at
    assert _tools(tmp_path).run("read", {"path": "zero"}).outcome.value == "refused"
