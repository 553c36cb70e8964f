"""Choosing a run's executor from its settings: ``threads`` (the default) or ``ray``.

The Ray executor is imported only when asked for, so ``ray`` is needed only by
runs that use it (the ``evaltape[ray]`` extra).
"""

from __future__ import annotations

from evaltape.scoring._config import Config
from evaltape.scoring.run._executor import ExecutorFactory, thread_executor
from evaltape.scoring.run._host import Host
from evaltape.scoring.run._rescore_exec import RescorerFactory
from evaltape.scoring.run._setup import RunRefused

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


def resolve_executor(config: Config, host: Host) -> ExecutorFactory:
    """The factory of the executor the settings name; ``RunRefused`` when it cannot be had."""
    if check_executor(config) == "threads":
        return thread_executor
    try:
        from evaltape.scoring.run._ray_executor import ray_executor
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    return ray_executor(address=config.ray_address, project=host.project)


def resolve_rescorer(config: Config) -> RescorerFactory | None:
    """Where a rescore scores its sessions: None (here) for ``threads``, batched Ray tasks
    for ``ray`` (a local instance gets ``concurrency`` CPUs)."""
    if check_executor(config) == "threads":
        return None
    try:
        from evaltape.scoring.run._ray_rescore import ray_rescorer
    except ImportError as exc:
        raise RunRefused(RAY_MISSING) from exc
    return ray_rescorer(address=config.ray_address, num_cpus=config.concurrency)
