"""Choosing a run's executor from its settings: ``threads`` (the default) or ``ray``.

The Ray executor is imported only when asked for, so ``ray`` is needed only by
runs that use it (the ``evaltape[ray]`` extra).
"""

from __future__ import annotations

import os

from ..._config import Config
from .._host import Host
from .._setup import RunRefused
from ..rescore._exec import RescorerFactory
from ._executor import ExecutorFactory, thread_executor

EXECUTORS = ("threads", "ray")
"""The executor names the ``executor`` setting takes."""

RAY_MISSING = "--executor ray needs 'pip install evaltape[ray]'"
"""The refusal when ``ray`` is not installed."""


def check_executor(config: Config) -> str:
    """The configured executor's name; ``RunRefused`` for an unknown one, or for a
    ``ray_address`` without ``executor = "ray"``."""
    name = config.executor or "threads"
    if name not in EXECUTORS:
        raise RunRefused(f'executor: "{name}" is not one of {", ".join(EXECUTORS)}')
    if config.ray_address and name != "ray":
        raise RunRefused("--ray-address needs --executor ray")
    return name


LOOPBACK = ("127.", "localhost", "[::1]")
"""Address prefixes that name this machine's loopback interface."""


def ray_environment(address: str | None) -> dict[str, str]:
    """The variables Ray must read at import for a run at ``address``: never usage
    statistics, and for a local instance (or one at a loopback address) every Ray process
    on 127.0.0.1 rather than the machine's network address."""
    variables = {"RAY_USAGE_STATS_ENABLED": "0"}
    if not address or address.startswith(LOOPBACK):
        variables["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return variables


def _prepare_ray(address: str | None) -> None:
    # Ray reads these when it is imported (and its workers inherit them): the one
    # place this process's environment is changed, and only for a Ray run.
    for key, value in ray_environment(address).items():
        os.environ.setdefault(key, value)


def resolve_executor(config: Config, host: Host) -> ExecutorFactory:
    """The factory of the executor the settings name; ``RunRefused`` when it cannot be had."""
    if check_executor(config) == "threads":
        return thread_executor
    _prepare_ray(config.ray_address)
    try:
        from ._ray import RayUnavailable, ray_executor
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    try:
        return ray_executor(
            address=config.ray_address, project=host.project, num_cpus=config.concurrency
        )
    except RayUnavailable as exc:
        raise RunRefused(str(exc)) from exc


def resolve_rescorer(config: Config) -> RescorerFactory | None:
    """Where a rescore scores its sessions: None (here) for ``threads``, batched Ray tasks
    for ``ray`` (a local instance gets ``concurrency`` CPUs)."""
    if check_executor(config) == "threads":
        return None
    _prepare_ray(config.ray_address)
    try:
        from ._ray_rescore import ray_rescorer
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    return ray_rescorer(address=config.ray_address, num_cpus=config.concurrency)
