"""Reaching Ray: a local instance or a cluster, quickly, quietly, with the project shipped.

Imported only for ``--executor ray``.  Before ``ray.init`` is asked to join a
cluster, its address is probed with a plain TCP connection (``PROBE_SECONDS``),
so an address nobody answers at fails in seconds, not after Ray's own
minute of retries; Ray's own wait for the cluster is bounded the same way
(``CONNECT_SECONDS``).  A cluster that asks for an auth token while this
process has not enabled Ray's token mode gets the fix in one line.

The project folder (agents, custom scorers) is shipped to the workers as
Ray's ``working_dir`` when the cluster is not on this machine, or when asked
(``--ray-working-dir``): workers then import agents and scorers from their
copy.  Folders that are never needed there (``.git``, virtual environments,
the results and cassettes folders: tapes travel with the jobs) are left out,
and a folder over ``MAX_WORKING_DIR`` is refused with a line naming its
largest parts.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..._errors import ScoringError

PROBE_SECONDS = 5.0
"""How long the TCP probe of a cluster's address may take."""

CONNECT_SECONDS = 8
"""How long Ray may wait for a cluster that accepted the probe (its GCS handshake)."""

MAX_WORKING_DIR = 100 * 1024 * 1024
"""Largest project folder shipped to workers (Ray uploads it once per run)."""

EXCLUDED = (".git", ".venv", "venv", ".venv-*", "__pycache__", "node_modules", ".evaltape")
"""Names never shipped (``working_dir`` excludes, gitignore syntax)."""

LOOPBACK = ("127.", "localhost", "[::1]")
"""Address prefixes that name this machine's loopback interface."""

TOKEN_HINT = (
    "the cluster asks for an auth token: set RAY_AUTH_MODE=token (Ray reads the token "
    "from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
)
"""The one line said when a cluster refuses this process's (missing) token."""


class RayUnavailable(ScoringError):
    """Ray could not be started, or the cluster at the address could not be reached."""


def is_local(address: str | None) -> bool:
    """No address (a local instance for the run) or one on this machine's loopback."""
    bare = (address or "").removeprefix("ray://")
    return not bare or bare.startswith(LOOPBACK)


def _host_port(address: str) -> tuple[str, int] | None:
    bare = address.removeprefix("ray://").rstrip("/")
    host, sep, port = bare.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe(address: str, timeout: float = PROBE_SECONDS) -> None:
    """``RayUnavailable`` unless something accepts a TCP connection at ``address``."""
    where = _host_port(address)
    if where is None:
        raise RayUnavailable(f"--ray-address {address}: expected HOST:PORT (or ray://HOST:PORT)")
    try:
        with socket.create_connection(where, timeout=timeout):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise RayUnavailable(
            f"--executor ray: cannot reach the Ray cluster at {address}: {why}"
        ) from exc


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def working_dir_of(folder: Path, leave_out: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Ray's ``runtime_env`` shipping ``folder``; ``RayUnavailable`` when it is too big.

    ``leave_out`` are folders inside it that workers never need (results, cassettes).
    """
    if not folder.is_dir():
        raise RayUnavailable(f"--ray-working-dir {folder}: no such folder")
    excludes = list(EXCLUDED)
    for path in leave_out:
        try:
            excludes.append("/" + path.resolve().relative_to(folder.resolve()).as_posix())
        except ValueError:
            continue  # outside the folder: not shipped anyway
    sizes: dict[str, int] = {}
    total = 0
    skipped = {e.strip("/") for e in excludes}
    for root, dirs, files in os.walk(folder):
        here = Path(root).relative_to(folder)
        dirs[:] = [
            d
            for d in dirs
            if d not in skipped
            and not d.startswith(".venv-")
            and (here / d).as_posix() not in skipped
        ]
        for name in files:
            try:
                size = (Path(root) / name).lstat().st_size
            except OSError:
                continue
            total += size
            top = here.parts[0] if here.parts else name
            sizes[top] = sizes.get(top, 0) + size
    if total > MAX_WORKING_DIR:
        biggest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
        named = ", ".join(f"{name} {size / 2**20:.0f} MiB" for name, size in biggest)
        raise RayUnavailable(
            f"--ray-working-dir {folder}: {total / 2**20:.1f} MiB is over the "
            f"{MAX_WORKING_DIR // 2**20} MiB that is shipped to workers (largest: {named}); "
            "name a smaller folder with --ray-working-dir, or install the agent on the workers "
            "and pass --ray-working-dir off"
        )
    return {"working_dir": str(folder), "excludes": excludes}


_SAVED_STDOUT: list[TextIO] = []


def _quiet_stdout() -> None:
    """While Ray is connected, what Python prints to standard output goes to standard
    error: Ray's driver prints the cluster's errors (a dead raylet's account, dozens of
    lines) to ``sys.stdout``, where they would break ``--json -``."""
    if not _SAVED_STDOUT:
        sys.stdout.flush()
        _SAVED_STDOUT.append(sys.stdout)
        sys.stdout = sys.stderr


def stop_ray() -> None:
    """Disconnect from Ray (shutting down a local instance) and give standard output back."""
    import ray

    try:
        ray.shutdown()
    finally:
        if _SAVED_STDOUT:
            sys.stdout = _SAVED_STDOUT.pop()


def start_ray(
    address: str | None, num_cpus: int, runtime_env: dict[str, Any] | None = None
) -> bool:
    """Connect to the cluster at ``address``, or start a local instance; False when this
    process was already connected (it is then left connected).  ``RayUnavailable`` when
    neither works, in one line.  Until ``stop_ray``, standard output goes to standard
    error (``_quiet_stdout``)."""
    import ray

    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": "ERROR",
        "configure_logging": True,
    }
    if runtime_env:
        options["runtime_env"] = runtime_env
    if address:
        probe(address)
        os.environ.setdefault("RAY_gcs_server_port_wait_time_s", str(CONNECT_SECONDS))
    _quiet_stdout()
    try:
        if address:
            ray.init(address=address, **options)
        else:
            ray.init(num_cpus=num_cpus, **options)
    except Exception as exc:
        stop_ray()  # Ray raises many kinds (ConnectionError, RuntimeError, ...): all end here
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        if any("InvalidAuthToken" in str(e) or "Unauthenticated" in str(e) for e in _chain(exc)):
            raise RayUnavailable(f"--executor ray: cannot join {where}: {TOKEN_HINT}") from exc
        raise RayUnavailable(f"--executor ray: cannot start {where}: {_first_line(exc)}") from exc
    return True
