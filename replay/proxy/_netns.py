"""A network namespace for a command agent during replay: only the proxy is reachable.

A replay must not depend on the machine having a network: an agent whose
framework phones home (a tracing exporter, a price-map download) would pass
where the internet is reachable and fail where it is not.  So a replayed
command agent runs in a fresh network namespace holding nothing but a
loopback device.  The proxy cannot listen there from this process, so a
small holder process enters a new namespace, brings its loopback up, binds
one listening socket per provider on 127.0.0.1 and hands the sockets back
over a Unix socket pair; the proxies serve those sockets from outside, and
the agent joins the holder's namespace through ``nsenter``.  Connections to
anything but those sockets fail at once (no route).

Where a namespace cannot be made (no ``nsenter``, no permission for either a
network namespace or a user-owned one), ``IsolationUnavailable`` says why in
one line; the caller refuses to run the agent unless the user opted out.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .._errors import ReplayError

OPT_OUT_VAR = "EVALTAPE_AGENT_NETWORK"
"""Set to ``open`` in the environment to replay command agents without a namespace."""
HANDSHAKE_SECONDS = 10.0
"""How long the holder may take to hand over its sockets."""

_HOLDER = r"""
import ctypes, fcntl, os, socket, struct, sys
chan = socket.socket(fileno=int(sys.argv[1]))
libc = ctypes.CDLL(None, use_errno=True)
mode = b"net"
if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
        why = os.strerror(ctypes.get_errno())
        chan.sendall(b"cannot create a network namespace: " + why.encode())
        sys.exit(1)
    maps = (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1"))
    for name, text in maps:
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    mode = b"user"
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
fcntl.ioctl(probe.fileno(), 0x8914, struct.pack("16sH14s", b"lo", 0x1 | 0x40, b""))  # lo up
listening = []
for _ in range(int(sys.argv[2])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    listening.append(s)
socket.send_fds(chan, [mode], [s.fileno() for s in listening])
chan.recv(1)
"""


class IsolationUnavailable(ReplayError):
    """This machine cannot give the agent a network namespace; the message says why."""


class AgentNetns:
    """A held network namespace with ``sockets`` listening inside it.

    Use as a context manager: leaving it ends the holder, after the agent
    (run through ``command``) has finished.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        channel: socket.socket,
        sockets: Sequence[socket.socket],
        *,
        user: bool,
    ) -> None:
        self.process = process
        self.channel = channel
        self.sockets = tuple(sockets)
        self.user = user

    @classmethod
    def open(cls, count: int, *, python: str = sys.executable) -> AgentNetns:
        """Make a namespace with ``count`` listening sockets; ``IsolationUnavailable`` if not."""
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise IsolationUnavailable("network isolation unavailable: nsenter is not installed")
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [python, "-S", "-c", _HOLDER, str(theirs.fileno()), str(count)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        finally:
            theirs.close()
        try:
            ours.settimeout(HANDSHAKE_SECONDS)
            message, fds, _, _ = socket.recv_fds(ours, 1024, count)
        except OSError as exc:
            message, fds = f"no answer from the namespace holder: {exc}".encode(), []
        if len(fds) != count:
            ours.close()
            process.kill()
            _, err = process.communicate()
            lines = [*message.decode(errors="replace").splitlines(), *err.decode().splitlines()]
            why = lines[-1] if lines else f"the holder exited with code {process.returncode}"
            raise IsolationUnavailable(f"network isolation unavailable: {why}")
        sockets = [socket.socket(fileno=fd) for fd in fds]
        return cls(process, ours, sockets, user=message == b"user")

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        ns = f"/proc/{self.process.pid}/ns"
        user = [f"--user={ns}/user", "--preserve-credentials"] if self.user else []
        return ["nsenter", *user, f"--net={ns}/net", "--", *argv]

    def close(self) -> None:
        """End the holder (the namespace goes once the agent and the sockets are gone)."""
        with contextlib.suppress(OSError):
            self.channel.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()

    def __enter__(self) -> AgentNetns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def isolation_wanted(environ: Mapping[str, str]) -> bool:
    """False when the environment opts out (``EVALTAPE_AGENT_NETWORK=open``)."""
    return environ.get(OPT_OUT_VAR, "").strip().lower() != "open"
