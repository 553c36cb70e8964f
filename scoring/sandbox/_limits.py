"""What a sandboxed command may use, and the command lines that enforce it.

``SandboxPolicy`` holds the limits; ``limit_argv`` turns them into a
``prlimit`` prefix run inside the sandbox (so the limits bind the command and
everything it starts, and no ``preexec_fn`` runs in a threaded parent);
``mount_argv`` lists the bubblewrap options that build the sandbox's
filesystem: the system folders read-only, a few files of ``/etc``, the
interpreter's folders, a private ``/tmp``, and the workspace as the only
writable path.
"""

from __future__ import annotations

import glob
import math
import os
import sys
from collections.abc import Iterable

import attrs

NOBODY = 65534
"""The uid and gid a command runs as when evaltape itself runs as root."""

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "alternatives",
    "group",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "passwd",
    "ssl",
)


@attrs.frozen(kw_only=True)
class SandboxPolicy:
    """Limits of one sandboxed command (``prlimit`` inside the sandbox)."""

    memory_bytes: int = 4 << 30
    """Address space of each process (RLIMIT_AS)."""
    processes: int = 256
    """Processes of the sandbox's user (RLIMIT_NPROC)."""
    cpu_seconds: int | None = None
    """CPU seconds of each process (RLIMIT_CPU); None: the wall timeout, rounded up, plus 1."""
    file_bytes: int = 1 << 30
    """Largest file a process may write (RLIMIT_FSIZE)."""
    open_files: int = 1024
    """Open file descriptors of each process (RLIMIT_NOFILE)."""
    tmp_bytes: int = 256 << 20
    """Size of the private ``/tmp`` (a tmpfs, counted against memory)."""
    workspace_bytes: int = 1 << 30
    """Most bytes the workspace may hold on disk while the command runs (its files'
    allocated blocks, counted every ``WORKSPACE_POLL`` seconds); past it the command and
    everything it started are killed.  The workspace stays a host folder, so what the
    command wrote is still there afterwards."""
    read_only: tuple[str, ...] = ()
    """More host folders or files to show read-only, at the same path."""
    interpreter: bool = True
    """Show this Python's installation (its virtual environment included) read-only."""

    def __attrs_post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "processes",
            "file_bytes",
            "open_files",
            "tmp_bytes",
            "workspace_bytes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"SandboxPolicy.{name} must be at least 1")
        if self.cpu_seconds is not None and self.cpu_seconds < 1:
            raise ValueError("SandboxPolicy.cpu_seconds must be at least 1")


def limit_argv(prlimit: str, policy: SandboxPolicy, timeout: float) -> list[str]:
    """``prlimit`` with every limit of ``policy``, ending in ``--``."""
    cpu = policy.cpu_seconds
    if cpu is None:
        cpu = max(1, math.ceil(timeout)) + 1 if math.isfinite(timeout) else 3600
    return [
        prlimit,
        f"--as={policy.memory_bytes}",
        f"--nproc={policy.processes}",
        f"--cpu={cpu}",
        f"--fsize={policy.file_bytes}",
        f"--nofile={policy.open_files}",
        "--core=0",
        "--",
    ]


def drop_root_argv(setpriv: str) -> list[str]:
    """``setpriv`` to nobody with no capabilities: root's processes ignore RLIMIT_NPROC."""
    return [
        setpriv,
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def mount_argv(policy: SandboxPolicy, workspace: str) -> list[str]:
    """bubblewrap's filesystem options: read-only system, private /tmp, writable workspace."""
    args: list[str] = []
    for path in _SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in (*_ETC, *(os.path.basename(p) for p in sorted(glob.glob("/etc/python3*")))):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--perms", "1777", "--size", str(policy.tmp_bytes), "--tmpfs", "/tmp"]
    shown = _outside_usr([*_interpreter_paths(policy), *policy.read_only])
    for folder in _parents([*shown, workspace]):
        args += ["--perms", "0755", "--dir", folder]
    for path in shown:
        args += ["--ro-bind", path, path]
    args += ["--bind", workspace, workspace, "--chdir", workspace]
    return args


def _parents(paths: Iterable[str]) -> list[str]:
    """The folders above ``paths`` that bubblewrap would otherwise create private (0700)."""
    taken = {"/", "/tmp", "/dev", "/proc", "/etc", *_SYSTEM}
    out: set[str] = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent not in taken and parent not in out:
            out.add(parent)
            parent = os.path.dirname(parent)
    return sorted(out)


def _interpreter_paths(policy: SandboxPolicy) -> list[str]:
    if not policy.interpreter:
        return []
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    return [os.path.realpath(p) for p in paths if os.path.isdir(p)]


def _outside_usr(paths: Iterable[str]) -> list[str]:
    """Absolute, existing paths not already shown by the system folders, each once."""
    out: list[str] = []
    for path in sorted({os.path.abspath(p) for p in paths}):
        if not os.path.exists(path):
            continue
        if any(path == s or path.startswith(s + "/") for s in _SYSTEM if os.path.isdir(s)):
            continue
        if any(path.startswith(kept + "/") for kept in out):
            continue
        out.append(path)
    return out
