"""The one place a run's ``JobEnv`` is built from its settings, host and selection.

Live, replay and A/B runs differ only in what they add: live and A/B a
``LiveWire`` (the network and its settings), replay its ``ReplayRules``.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import httpx

from evaltape.recorder import VERSION, Source
from evaltape.recorder.redact import default_redactor, secret_values

from .._config import Config
from .._network import network_transport
from ..cost._pricing import Prices, built_in_prices
from ..judge._judge import Judge
from ..judge._judgement import Floors
from ..sandbox import Sandbox
from ._host import Host
from ._jobs import JobEnv, LiveWire, ReplayRules
from ._setup import Selection, base_url_of
from ._stop import Stop
from .attempt._agents import load_agent
from .attempt._judge_step import default_scorer


def live_wire(
    host: Host, *, source: Source, source_detail: str, seed: int | None, retries: int
) -> LiveWire:
    """The network side of live jobs: the host's transport and the request's settings."""
    return LiveWire(
        network=host.network(),
        source=source,
        source_detail=source_detail,
        seed=seed,
        retries=retries,
    )


def job_env(
    config: Config,
    host: Host,
    selection: Selection,
    *,
    commit: str,
    judge: Judge | None,
    prices: Prices | None = None,
    live: LiveWire | None = None,
    replay: ReplayRules | None = None,
    sandbox: Sandbox | None = None,
    workspaces: Path | None = None,
) -> JobEnv:
    """What every job of the run reads, with a fresh stop signal and the default scorer.

    ``sandbox`` (default: bubblewrap found on the host's PATH) runs verify
    commands and is the agent's ``Task.sandbox``; ``workspaces`` is the folder the
    attempts' workspaces are made in (``run_workspaces``; default the temporary folder).
    """
    chosen = sandbox if sandbox is not None else Sandbox.find(host.environ)
    return JobEnv(
        scrub=config.scrub,
        upstreams=config.upstream,
        spec=selection.spec,
        agent=selection.agent,
        scorer=default_scorer(chosen),
        stop=Stop(),
        wall_clock=host.clock,
        environ=host.environ,
        base_url=base_url_of(config),
        hang_limit=config.hang_limit,
        harness_commit=commit,
        harness_version=VERSION,
        judge=judge,
        floors=Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor),
        prices=prices if prices is not None else built_in_prices(),
        live=live,
        replay=replay if replay is not None else ReplayRules(),
        redactor=default_redactor().extended(values=secret_values(host.environ)),
        sandbox=chosen,
        workspaces=workspaces,
    )


STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The variable GitHub Actions sets to the file a step's Markdown summary is appended to."""


def step_summary_path(host: Host) -> Path | None:
    """The job summary file the host's CI names, or None outside such a CI."""
    named = host.environ.get(STEP_SUMMARY, "")
    return Path(named) if named else None


def shipped_env(env: JobEnv) -> JobEnv:
    """``env`` as it travels to another process: no imported agent, no network transports
    (the worker imports the agent by name and opens its own network); its stop signal
    pickles as a fresh one."""
    live = env.live
    return attrs.evolve(
        env,
        agent=None,
        live=attrs.evolve(live, network=httpx.BaseTransport()) if live is not None else None,
        judge=attrs.evolve(env.judge, network=None) if env.judge is not None else None,
    )


def worker_env(env: JobEnv, project: Path) -> JobEnv:
    """A ``shipped_env`` made whole on a worker: the agent imported by name from
    ``project`` (same installed environment), this process's network transport."""
    live = env.live
    return attrs.evolve(
        env,
        agent=load_agent(env.spec, project),
        live=attrs.evolve(live, network=network_transport()) if live is not None else None,
        judge=attrs.evolve(env.judge, network=network_transport())
        if env.judge is not None
        else None,
    )
