"""``evaltape rerecord``: record again, live, the attempts a replay found stale."""

from __future__ import annotations

import sys

import click

from evaltape.recorder import Source

from .._config import Config
from ..outputs.console._live import render_outcome
from ..outputs.console._progress import CliReporter
from ..run._gate_flow import GateOptions
from ..run._host import Host
from ..run._rerecord import RerecordRequest, run_rerecord
from ._boundary import boundary, interruptible
from ._options import RETRIES, Finite, cases_option, config_options
from .live import SOURCES

EXIT_BUDGET = 3
"""The budget stopped the run: some stale attempts were not recorded again."""


EXAMPLE = """\b
Example:
  evaltape rerecord --pricing prices.json --budget 2
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Record again, live, exactly the attempts a replay found STALE.",
    epilog=EXAMPLE,
)
@click.option(
    "--from",
    "from_run",
    metavar="RUN",
    default=None,
    help="The replay run to act on (latest, an id, a unique prefix, a record path); "
    "default: run a replay now.",
)
@cases_option
@click.option("--suite", metavar="NAME", help="Only the suite NAME (a suite file's stem).")
@click.option(
    "--budget",
    type=Finite(min=0),
    default=None,
    metavar="USD",
    help="Refuse when the estimate exceeds USD; stop starting attempts once USD is spent.",
)
@click.option(
    "--accept-harness-changes",
    is_flag=True,
    help="Also re-record CHANGED attempts (a tool result or the conversation changed).",
)
@click.option(
    "--from-turn",
    is_flag=True,
    help="Serve each stale attempt's recorded turns before its first changed request and "
    "go live from there; the estimate and --budget count the live turns only.  Default: "
    "whole sessions.",
)
@click.option(
    "--source",
    type=click.Choice([s.value for s in SOURCES]),
    default=None,
    help="Where the model responses come from, as recorded in each new session "
    "(default: the source of the session it replaces).",
)
@click.option(
    "--source-detail",
    default=None,
    metavar="TEXT",
    help="Names the server and model (default: the replaced session's, unless --source is given).",
)
@click.option("--seed", type=int, default=None, help="Sampling seed handed to the agent.")
@click.option(
    "--retries",
    type=RETRIES,
    default=4,
    show_default=True,
    help="Retries of a 429, 5xx or connection failure before the agent sees it.",
)
@config_options(
    "suites",
    "rubrics",
    "cassettes",
    "results",
    "agent",
    "base_url",
    "upstream",
    "concurrency",
    "pricing",
    "price",
    "sandbox",
)
@boundary
@interruptible
def rerecord(
    from_run: str | None,
    cases: tuple[str, ...],
    suite: str | None,
    budget: float | None,
    accept_harness_changes: bool,
    from_turn: bool,
    source: str | None,
    source_detail: str | None,
    seed: int | None,
    retries: int,
    config: Config,
) -> None:
    """Record again, live, exactly the attempts a replay found STALE.

    Prints the plan (one line per case and model with its attempts) and the
    cost estimated from the recorded tokens before any call; each new session
    replaces the old one in its cassette when it is at least as complete (a
    provider error, a refused connection or a stream cut short keeps the old
    one), with the old one's source label unless --source is given.  Exit 0
    when every planned attempt was recorded again (or nothing was stale); 2
    before any call on bad input, CHANGED attempts without
    --accept-harness-changes (never with --from-turn), or an estimate over
    --budget; 3 when the budget
    stopped new attempts; 4 when an attempt could not be recorded (its old
    session kept); 124/130 as for live.
    """
    outcome = run_rerecord(
        RerecordRequest(
            config=config,
            host=Host.of_process(),
            from_run=from_run,
            cases=cases,
            suite=suite,
            budget=budget,
            accept_harness_changes=accept_harness_changes,
            from_turn=from_turn,
            source=Source(source) if source is not None else None,
            source_detail=source_detail,
            seed=seed,
            retries=retries,
            reporter=CliReporter(),
        )
    )
    if outcome.live is None:
        click.echo(f"nothing stale in replay run {outcome.replay.run_id}; nothing to re-record")
        return
    code = render_outcome(outcome.live, GateOptions())
    live = outcome.live
    click.echo(
        f"re-recorded {live.recorded} of {outcome.attempts} attempt(s) into "
        f"{len(live.cassettes)} cassette(s)"
    )
    if code == 0 and live.pool.not_started:
        code = EXIT_BUDGET
    sys.exit(code)
