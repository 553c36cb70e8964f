"""Running a command a tape or a model chose, confined by bubblewrap.

A verify command restored from a stranger's tape, or a shell command a model
asked for, runs in a sandbox: no network (its own empty network namespace),
its own pid, IPC and UTS namespaces, the system folders read-only, no home
folders, no ``/tmp`` of the host (a private one instead), the workspace as the
only writable path, an environment built from an allow-list (no API keys),
and limits on memory, processes, CPU, file size and the workspace's total size
(``SandboxPolicy``) under the caller's wall timeout.  As root the command runs as ``nobody`` with no
capabilities, since the kernel does not apply the process limit to root.

The sandbox fails closed: bubblewrap reports on a status pipe once the
command has started, and a run without that report is a ``SandboxError``,
never an exit code.  ``Sandbox.unconfined()`` is the explicit opt-out (the
command runs as today, with the same environment and wall timeout).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence

import attrs

from evaltape.replay import ReplayError
from evaltape.replay._shared import wait_exit

from ._limits import (
    NOBODY,
    SandboxPolicy,
    drop_root_argv,
    limit_argv,
    mount_argv,
)

OUTPUT_LIMIT = 1 << 20
"""Bytes of output kept from each end of a longer output (read from a pipe, held in memory;
nothing is spooled to a file)."""
WORKSPACE_POLL = 0.1
"""Seconds between two counts of the workspace's size while a command runs."""
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_SIGNALLED = 128


class SandboxError(ReplayError):
    """The sandbox is missing (no bubblewrap, no namespaces) or could not start a command."""


@attrs.frozen(kw_only=True)
class SandboxResult:
    """How a sandboxed command ended."""

    exit_code: int
    """The exit status; negative for a signal (``-9`` after a timeout kill)."""
    output: str
    """Standard output and error together, decoded as UTF-8 (errors replaced); of a
    longer output the first and last ``OUTPUT_LIMIT`` bytes, joined by a newline (read
    from a pipe and kept in memory; the middle is dropped as it arrives)."""
    timed_out: bool
    """True if the command ran past its wall timeout and was killed."""
    confined: bool
    """True if it ran in the sandbox; False under ``Sandbox.unconfined()``."""


@attrs.frozen(kw_only=True)
class Sandbox:
    """Where bubblewrap is and what a command may use; ``run`` runs one command."""

    bwrap: str | None
    """bubblewrap's path; None when it was not found (a confined run then refuses)."""
    confined: bool = True
    """False: the user opted out; commands run unconfined."""
    policy: SandboxPolicy = attrs.field(factory=SandboxPolicy)
    """Limits and extra read-only paths."""
    path: str = _SAFE_PATH
    """``PATH`` of the command unless the caller's ``env`` sets one."""

    @classmethod
    def find(
        cls, environ: Mapping[str, str] | None = None, policy: SandboxPolicy | None = None
    ) -> Sandbox:
        """A confined sandbox using the ``bwrap`` on ``environ["PATH"]`` (default: this
        process's environment).  Never raises: a missing bubblewrap shows in ``problem()``."""
        source = os.environ if environ is None else environ
        path = source.get("PATH", os.defpath)
        return cls(
            bwrap=shutil.which("bwrap", path=path),
            policy=policy if policy is not None else SandboxPolicy(),
            path=path,
        )

    @classmethod
    def unconfined(
        cls, environ: Mapping[str, str] | None = None, policy: SandboxPolicy | None = None
    ) -> Sandbox:
        """The opt-out: commands run as the caller, with network and the whole filesystem."""
        found = cls.find(environ, policy)
        return attrs.evolve(found, confined=False)

    def problem(self) -> str | None:
        """Why a confined command cannot run here (one line), or None if it can.

        Runs ``true`` in the sandbox once; unconfined, always None.
        """
        if not self.confined:
            return None
        with tempfile.TemporaryDirectory(prefix="evaltape-probe-") as scratch:
            try:
                result = self.run(["true"], workspace=scratch, timeout=30.0)
            except SandboxError as exc:
                return str(exc)
        if result.exit_code != 0:
            return f"the sandbox could not run `true` (exit {result.exit_code})"
        return None

    def run(
        self,
        argv: Sequence[str],
        *,
        workspace: str | os.PathLike[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
    ) -> SandboxResult:
        """Run ``argv`` in ``workspace`` under ``timeout`` seconds; see ``run_sandboxed``."""
        if not argv:
            raise ValueError("argv must not be empty")
        work = os.path.realpath(workspace)
        child_env = {
            "PATH": self.path,
            "HOME": work,
            "TMPDIR": "/tmp" if self.confined else tempfile.gettempdir(),
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        quota = self.policy.workspace_bytes
        if not self.confined:
            return _run(
                list(argv), work, child_env, timeout, status=None, confined=False, quota=quota
            )
        full = self._argv(list(argv), work, timeout)
        if shutil.which(argv[0], path=child_env["PATH"]) is None:
            # As Popen would: a missing program is an OSError, not an exit code of bwrap's.
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
        if os.geteuid() == 0:
            _give_to_nobody(work)
        read, write = os.pipe()
        try:
            return _run(
                [*full[:1], "--json-status-fd", str(write), *full[1:]],
                work,
                child_env,
                timeout,
                status=(read, write),
                confined=True,
                quota=quota,
            )
        finally:
            os.close(read)

    def _argv(self, argv: list[str], work: str, timeout: float) -> list[str]:
        if self.bwrap is None:
            raise SandboxError("bubblewrap (bwrap) is not installed or not on PATH")
        prlimit = shutil.which("prlimit", path=_SAFE_PATH)
        if prlimit is None:
            raise SandboxError("prlimit (util-linux) is not installed")
        root = os.geteuid() == 0
        options = ["--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid"]
        options += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        prefix = limit_argv(prlimit, self.policy, timeout)
        if root:
            setpriv = shutil.which("setpriv", path=_SAFE_PATH)
            if setpriv is None:
                raise SandboxError("setpriv (util-linux) is needed to drop root and is missing")
            prefix += drop_root_argv(setpriv)
        else:
            options += ["--unshare-user", "--cap-drop", "ALL"]
        return [self.bwrap, *options, *mount_argv(self.policy, work), "--", *prefix, *argv]


def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: str | os.PathLike[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> SandboxResult:
    """Run ``argv`` in ``workspace`` as evaltape runs verify commands and the bash tool.

    The environment is ``PATH``, ``HOME`` (the workspace), ``TMPDIR`` and
    ``LANG`` plus ``env`` (and ``PWD``, which bubblewrap sets); nothing else
    of the caller's reaches the command.
    ``sandbox`` defaults to ``Sandbox.find()``.  Raises ``SandboxError`` when
    the sandbox is missing or does not start; a command that fails or times
    out is a result, not an error.
    """
    chosen = sandbox if sandbox is not None else Sandbox.find()
    return chosen.run(argv, workspace=workspace, timeout=timeout, env=env)


def _run(
    argv: list[str],
    work: str,
    env: dict[str, str],
    timeout: float,
    *,
    status: tuple[int, int] | None,
    confined: bool,
    quota: int,
) -> SandboxResult:
    out_read, out_write = os.pipe()
    try:
        process = subprocess.Popen(
            argv,
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_write,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(status[1],) if status is not None else (),
        )
    except OSError as exc:
        os.close(out_read)
        if confined:
            raise SandboxError(f"cannot start bubblewrap: {exc.strerror or exc}") from exc
        raise
    finally:
        os.close(out_write)
        if status is not None:
            os.close(status[1])
    output_kept = _Output(out_read)
    watch = _Quota(work, quota, process)
    timed_out = False
    try:
        wait_exit(process, timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        watch.stop()
        _kill_group(process)
    code = process.returncode
    output = output_kept.text()
    if status is not None and not timed_out and b'"child-pid"' not in _drain(status[0]):
        line = next((x for x in output.splitlines() if x.strip()), f"exit {code}")
        raise SandboxError(f"the sandbox could not start: {line.strip()}")
    if confined and code == 1 and output.startswith("prlimit: "):
        raise SandboxError(f"the sandbox could not set its limits: {output.splitlines()[0]}")
    if confined and _SIGNALLED < code <= _SIGNALLED + 64:
        code = _SIGNALLED - code  # bubblewrap exits 128+N for a command killed by signal N
    if watch.over:
        code = -signal.SIGKILL
        output += f"\n[killed: the workspace grew past its {quota}-byte quota]"
    return SandboxResult(exit_code=code, output=output, timed_out=timed_out, confined=confined)


class _Output:
    """Reads a command's output from a pipe in a thread, keeping its first and last
    ``OUTPUT_LIMIT`` bytes in memory and dropping the middle as it goes."""

    LINGER = 5.0
    """Seconds ``text`` waits for the pipe to close after the command's group is killed; an
    unconfined command may have left a process holding it, whose later output is lost."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = False
        self._thread = threading.Thread(target=self._read, daemon=True, name="sandbox-output")
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, 65536):
                with self._lock:
                    room = OUTPUT_LIMIT - len(self._head)
                    if room > 0:
                        self._head += chunk[:room]
                        chunk = chunk[room:]
                    self._tail += chunk
                    if len(self._tail) > 2 * OUTPUT_LIMIT:
                        del self._tail[: len(self._tail) - OUTPUT_LIMIT]
                        self._dropped = True
        finally:
            os.close(self._fd)

    def text(self) -> str:
        """The output, once the writers are gone (the command's group was killed)."""
        self._thread.join(self.LINGER)
        with self._lock:
            if not self._dropped and len(self._tail) <= OUTPUT_LIMIT:
                data = bytes(self._head + self._tail)
            else:
                data = bytes(self._head) + b"\n" + bytes(self._tail[-OUTPUT_LIMIT:])
        return data.decode("utf-8", errors="replace")


class _Quota:
    """Counts the workspace's allocated bytes every ``WORKSPACE_POLL`` seconds in a thread
    and kills the command's process group when they pass ``limit``."""

    def __init__(self, work: str, limit: int, process: subprocess.Popen[bytes]) -> None:
        self.over = False
        self._work = work
        self._limit = limit
        self._process = process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="sandbox-quota")
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(WORKSPACE_POLL):
            if workspace_bytes(self._work, self._limit) > self._limit:
                self.over = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._process.pid, signal.SIGKILL)
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def workspace_bytes(root: str, limit: int) -> int:
    """Bytes the files under ``root`` take on disk (allocated blocks, so a sparse file
    counts what it uses), counting stops once past ``limit``."""
    total = 0
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
        if total > limit:
            break
    return total


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Stop the command and anything it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _drain(fd: int) -> bytes:
    """What bubblewrap wrote on its status pipe (the write end is closed by now)."""
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _give_to_nobody(work: str) -> None:
    """As root the command runs as nobody: the workspace must be nobody's to write."""
    for folder, dirs, files in os.walk(work):
        for name in (folder, *(os.path.join(folder, n) for n in (*dirs, *files))):
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, NOBODY, NOBODY, follow_symlinks=False)
