"""Choosing where a run's work is done from its settings.

``auto`` (the default): live attempts in threads of this process (they wait
on the model), a replay of ``PROCESS_REPLAYS`` attempts or more and a rescore's
scoring in processes, one per core (both are CPU-bound Python).  ``threads``:
everything in this process.  ``ray``: attempts and rescoring as Ray tasks.  The
Ray executor is imported only when asked for, so ``ray`` is needed only by runs
that use it (the ``evaltape[ray]`` extra).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..._config import Config
from .._host import Host
from .._setup import RunRefused
from ..rescore._exec import RescorerFactory
from ._executor import ExecutorFactory, cores, thread_executor

EXECUTORS = ("auto", "threads", "ray")
"""The executor names the ``executor`` setting takes."""

RAY_MISSING = "--executor ray needs 'pip install evaltape[ray]'"
"""The refusal when ``ray`` is not installed."""


def check_executor(config: Config) -> str:
    """The configured executor's name; ``RunRefused`` for an unknown one, or for a
    ``ray_address`` or ``ray_working_dir`` without ``executor = "ray"``."""
    name = config.executor or "auto"
    if name not in EXECUTORS:
        raise RunRefused(f'executor: "{name}" is not one of {", ".join(EXECUTORS)}')
    if config.ray_address and name != "ray":
        raise RunRefused("--ray-address needs --executor ray")
    if config.ray_working_dir and name != "ray":
        raise RunRefused("--ray-working-dir needs --executor ray")
    return name


def ray_runtime_env(config: Config, project: Path) -> dict[str, Any] | None:
    """Ray's ``runtime_env`` for the run: the folder ``ray_working_dir`` names (``off``:
    none), by default the project folder when the cluster is not on this machine."""
    from ._ray_connect import RayUnavailable, is_local, working_dir_of

    wanted = config.ray_working_dir
    if wanted == "off" or (wanted is None and is_local(config.ray_address)):
        return None
    folder = Path(wanted) if wanted else project
    if not folder.is_absolute():
        folder = project / folder
    try:
        return working_dir_of(folder, leave_out=(config.results, config.cassettes))
    except RayUnavailable as exc:
        raise RunRefused(str(exc)) from exc


def ray_environment(address: str | None) -> dict[str, str]:
    """The variables Ray must read at import for a run at ``address``: never usage
    statistics, and for a local instance (or one at a loopback address) every Ray process
    on 127.0.0.1 rather than the machine's network address."""
    from ._ray_connect import is_local

    variables = {"RAY_USAGE_STATS_ENABLED": "0"}
    if is_local(address):
        variables["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return variables


def _prepare_ray(address: str | None) -> None:
    # Ray reads these when it is imported (and its workers inherit them): the one
    # place this process's environment is changed, and only for a Ray run.
    for key, value in ray_environment(address).items():
        os.environ.setdefault(key, value)


PROCESS_REPLAYS = 32
"""Replays of this many attempts or more use one process per core with ``auto``; fewer
run in threads (starting the processes would cost more than they save)."""


def resolve_executor(config: Config, host: Host, *, replays: int = 0) -> ExecutorFactory:
    """The factory of the executor the settings name; ``RunRefused`` when it cannot be had.
    ``replays``: how many attempts a replay will run (0 for a live run)."""
    name = check_executor(config)
    if name == "threads":
        return thread_executor
    if name == "auto":
        from ._processes import process_executor

        if replays >= PROCESS_REPLAYS and cores() > 1:
            return process_executor(processes=cores(), project=host.project)
        return thread_executor
    _prepare_ray(config.ray_address)
    runtime_env = ray_runtime_env(config, host.project)
    try:
        from ._ray import ray_executor
        from ._ray_connect import RayUnavailable
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    try:
        return ray_executor(
            address=config.ray_address,
            project=host.project,
            num_cpus=config.concurrency,
            runtime_env=runtime_env,
        )
    except RayUnavailable as exc:
        raise RunRefused(str(exc)) from exc


def resolve_rescorer(config: Config, project: Path) -> RescorerFactory | None:
    """Where a rescore scores its sessions: None (here) for ``threads``, a pool of one
    process per core for ``auto`` (here on a one-core machine), batched
    Ray tasks for ``ray`` (a local instance gets ``concurrency`` CPUs)."""
    name = check_executor(config)
    if name == "threads":
        return None
    if name == "auto":
        from ._process_rescore import process_rescorer

        return process_rescorer(processes=cores()) if cores() > 1 else None
    _prepare_ray(config.ray_address)
    runtime_env = ray_runtime_env(config, project)
    try:
        from ._ray_rescore import ray_rescorer
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    return ray_rescorer(
        address=config.ray_address, num_cpus=config.concurrency, runtime_env=runtime_env
    )
