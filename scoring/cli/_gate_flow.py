"""The gate, baselines and the scoreboard, as ``evaltape live`` flags.

``@gate_options`` adds ``--gate``, ``--alpha``, ``--confirm-trials N``,
``--plan-drop POINTS``, ``--accept-baseline``, ``--baseline NAME``,
``--save-baseline``, ``--list-baselines``, ``--baseline-history NAME`` and
``--scoreboard`` and hands the command one
``GateOptions``.  The decisions are ``verdicts._gate_flow``'s (``run_live``
calls it); this module lists baselines and prints the gate report, the
scoreboard and what was saved.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from .._config import Config, display_path
from ..outputs.console._terminal import fail
from ..results import _baselines as baselines
from ..results._baselines import Baseline, BaselineError
from ..run._gate_flow import (
    GATE_TRIALS,
    GateOptions,
    baselines_folder,
)
from ..verdicts._gate import CONFIRM_TRIALS, PLAN_DROP
from ._options import PROBABILITY, Finite

R = TypeVar("R")


def gate_options(func: Callable[..., R]) -> Callable[..., R]:
    """Add the gate and baseline flags; the body receives ``gate_opts: GateOptions`` and
    ``listing: BaselineListing`` (what to list instead of running, command line only)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        opts = GateOptions(
            gate=kwargs.pop("gate"),
            alpha=kwargs.pop("alpha"),
            accept=kwargs.pop("accept_baseline"),
            baseline=kwargs.pop("baseline_name"),
            save=kwargs.pop("save_baseline"),
            scoreboard=kwargs.pop("scoreboard"),
            confirm=kwargs.pop("confirm_trials"),
            plan_drop=kwargs.pop("plan_drop") / 100.0,
        )
        if opts.accept and not opts.gate:
            raise click.UsageError("--accept-baseline only makes sense with --gate")
        listing = BaselineListing(
            every=kwargs.pop("list_baselines"), history_of=kwargs.pop("baseline_history")
        )
        return func(*args, gate_opts=opts, listing=listing, **kwargs)

    flags: Sequence[Callable[[Callable[..., Any]], Callable[..., Any]]] = (
        click.option(
            "--gate",
            is_flag=True,
            help="Decide the release gate against the baseline: exit 1 when it closes. "
            "Implies --trials 3.",
        ),
        click.option(
            "--alpha",
            type=PROBABILITY,
            default=0.05,
            show_default=True,
            help="Significance level of the gate's paired regression test.",
        ),
        click.option(
            "--confirm-trials",
            type=click.IntRange(min=0, max=20),
            default=CONFIRM_TRIALS,
            show_default=True,
            metavar="N",
            help="With --gate: a case that passed all (or all but one) of its baseline trials "
            "and fails every trial now is run up to N more times, 3 at a time, stopping at a "
            "pass; it closes the gate only if all of them fail (0: close at once).",
        ),
        click.option(
            "--plan-drop",
            type=Finite(min=0, max=100, min_open=True),
            default=PLAN_DROP * 100,
            show_default=True,
            metavar="POINTS",
            help="With --gate: the drop, in points, whose needed case count the power note gives.",
        ),
        click.option(
            "--accept-baseline",
            is_flag=True,
            help="With --gate: print every reason it closed, exit 0, and let this run "
            "become a baseline (only when the suite shrank, never when the agent got worse); "
            "it never exempts a case from the previously-green rule.",
        ),
        click.option(
            "--baseline",
            "baseline_name",
            metavar="NAME",
            default=None,
            help="Compare against the saved baseline NAME (and save under NAME).",
        ),
        click.option(
            "--save-baseline",
            is_flag=True,
            help="Save this run as a baseline in <suites>/baselines/ (latest + dated copy).",
        ),
        click.option("--list-baselines", is_flag=True, help="List saved baselines and exit."),
        click.option(
            "--baseline-history",
            metavar="NAME",
            default=None,
            help="List every saved copy of baseline NAME, newest first, and exit.",
        ),
        click.option(
            "--scoreboard",
            is_flag=True,
            help="Exactly 3 trials per case; a case is credited only when all 3 pass.",
        ),
    )
    decorated: Callable[..., Any] = wrapper
    for flag in reversed(flags):
        decorated = flag(decorated)
    return decorated


def folder(config: Config) -> Path:
    """Where baselines live: ``<suites>/baselines``."""
    return baselines_folder(config.suites)


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _describe(b: Baseline) -> str:
    accepted = " (accepted)" if b.accepted else ""
    commit = f" @{b.commit}" if b.commit else ""
    return (
        f"{b.name}: {b.model}, {b.passed}/{b.judged} passed, {b.trials} trial(s), "
        f"run {b.run_id}{commit}, saved {_when(b.saved_at)}{accepted}"
    )


@attrs.frozen(kw_only=True)
class BaselineListing:
    """``--list-baselines`` / ``--baseline-history NAME``: print instead of running."""

    every: bool = False
    """Print the latest copy of every saved baseline."""
    history_of: str | None = None
    """Print every saved copy of this baseline, newest first."""


def listing(opts: BaselineListing, config: Config) -> bool:
    """Handle ``--list-baselines`` / ``--baseline-history``; True when one was printed."""
    if not (opts.every or opts.history_of):
        return False
    where = folder(config)
    try:
        if opts.every:
            found = baselines.latest_all(where)
            if not found:
                click.echo(f"no baselines saved in {display_path(where)}")
            for b in found:
                click.echo(_describe(b))
        if opts.history_of:
            for b in baselines.timeline(where, opts.history_of):
                assert b.path is not None
                click.echo(f"{display_path(b.path)}  {_describe(b)}")
    except BaselineError as exc:
        fail(str(exc), 2)
    return True


def trials(opts: GateOptions, config: Config) -> int:
    """Trials per case: 3 under --gate/--scoreboard unless --trials says otherwise."""
    given = click.get_current_context().params.get("trials")
    if opts.scoreboard:
        if given is not None and given != GATE_TRIALS:
            fail(f"--scoreboard runs exactly {GATE_TRIALS} trials; drop --trials {given}", 2)
        return GATE_TRIALS
    if not opts.gate:
        return config.trials
    if given is None:
        return GATE_TRIALS
    if given < GATE_TRIALS:
        click.echo(
            f"evaltape: warning: --gate with --trials {given}: honoured, but {given} trial(s) "
            "per case is too noisy to block a release on; the gate normally uses 3",
            err=True,
        )
    return int(given)
