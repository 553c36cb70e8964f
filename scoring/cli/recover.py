"""``evaltape recover RUN``: close the record of a run whose driver died, keeping its sessions."""

from __future__ import annotations

import json
import time

import click

from .._config import Config
from ..results._record_json import attempt_to_json
from ..run._recover import RecoverOutcome, RecoverRequest, recover_run
from ._boundary import boundary
from ._options import config_options


def outcome_json(outcome: RecoverOutcome) -> dict[str, object]:
    """What ``recover --json`` prints."""
    return {
        "run_id": outcome.record.run_id,
        "state": outcome.record.state.value,
        "record": str(outcome.record_path),
        "why": outcome.why,
        "sessions": [
            {
                **attempt_to_json(s.attempt),
                "events": s.events,
                "exchanges": s.exchanges,
                "written": s.written,
            }
            for s in outcome.sessions
        ],
        "workspaces_removed": outcome.workspaces,
        "problems": list(outcome.problems),
    }


def describe(outcome: RecoverOutcome) -> list[str]:
    """The lines ``recover`` prints."""
    record = outcome.record
    lines = [f"run {record.run_id}: crashed ({outcome.why})"]
    for s in outcome.sessions:
        a = s.attempt
        how = "recovered" if s.written else "already on its tape"
        lines.append(
            f"  {a.suite}/{a.case_id} {a.model} attempt {a.attempt + 1}: interrupted, "
            f"{s.exchanges} model call(s), {s.events} events, {how} -> {a.tape} "
            f"session {a.session_id}"
        )
    finished = record.completed - len(outcome.sessions)
    lines.append(
        f"record: {finished} finished and {len(outcome.sessions)} interrupted attempt(s) of "
        f"{record.total} planned; state crashed; history line written"
    )
    lines.append(f"workspaces removed: {outcome.workspaces}")
    lines.append(f"next: evaltape rescore {record.run_id}  (the partial sessions, scored now)")
    return lines


EXAMPLE = """\b
Example:
  evaltape recover latest --json
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Close the record of a crashed run RUN and recover its sessions in flight.",
    epilog=EXAMPLE,
)
@click.argument("run", default="latest", metavar="[RUN]")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as one JSON object.")
@config_options("results")
@boundary
def recover(run: str, as_json: bool, config: Config) -> None:
    """Close the record of a crashed run RUN and recover its sessions in flight.

    A run whose driver was killed stays "running" (evaltape status shows it
    as crashed).  This turns the journals of its attempts in flight into
    sessions on the run's tapes, ended interrupted ("recovered after a
    crash"), adds those attempts to the record as interrupted (neither passes
    nor fails), removes the run's own workspace folder, closes the record as
    crashed and writes its history line.  RUN is "latest", a run id, a unique
    prefix of one, or a record's path.  Exits 2 when no run matches, the run
    has ended, or its driver is still alive; 1 when a record is damaged or
    something could not be recovered (each problem on stderr).
    """
    outcome = recover_run(RecoverRequest(results=config.results, run=run, clock=time.time))
    if as_json:
        click.echo(json.dumps(outcome_json(outcome), sort_keys=True))
    else:
        for line in describe(outcome):
            click.echo(line)
    for problem in outcome.problems:
        click.echo(f"evaltape: {problem}", err=True)
    if outcome.problems:
        raise SystemExit(1)
