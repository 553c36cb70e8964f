"""``evaltape status [RUN]``: state and progress of one run, finished or still running."""

from __future__ import annotations

import json
import time

import click

from .._config import Config
from ..outputs.console._exit import fail
from ..results._health import crash_reason
from ..results._record_files import UnknownRun, read_record, resolve_run
from ..results._records import RunRecord, RunState, Verdict, tally
from ..verdicts._flips import flips_to_json, render_flips, summarize_flips
from ._boundary import boundary
from ._options import config_options
from .history import format_time


def format_span(seconds: float) -> str:
    """``1h 02m 03s``, ``3m 12s`` or ``4.2s``."""
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def shown_state(record: RunRecord, crashed: str) -> str:
    """The state ``status`` shows: ``crashed`` for a running record whose driver is gone."""
    return RunState.CRASHED.value if crashed else record.state.value


def recover_hint(record: RunRecord) -> str:
    """The command that closes a crashed run's record and recovers its sessions."""
    return f"evaltape recover {record.run_id}"


def summary(record: RunRecord, now: float, crashed: str = "") -> dict[str, object]:
    """What ``status --json`` prints: counters, verdict counts and timing; a running record
    whose driver is gone (``crashed``, why) shows state ``crashed`` and the recover command."""
    end = record.finished_at if record.finished_at is not None else now
    return {
        "run_id": record.run_id,
        "kind": record.kind.value,
        "state": shown_state(record, crashed),
        "crashed": crashed,
        "recover": recover_hint(record) if crashed else "",
        "pid": record.pid,
        "host": record.host,
        "heartbeat_at": record.heartbeat_at,
        "commit": record.commit,
        "total": record.total,
        "completed": record.completed,
        **{v.value: record.count(v) for v in Verdict},
        "models": [
            {"model": m.model, "passed": m.passed, "total": m.total}
            for m in tally(record.attempts, record.models)
        ],
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "updated_at": record.updated_at,
        "elapsed": end - record.started_at,
        "repeat": flips_to_json(summarize_flips(record.attempts)) if _repeated(record) else None,
        "purpose": record.purpose,
        "gate": record.gate,
        "gate_blocked": record.gate_blocked,
        "baseline_accepted": record.baseline_accepted,
        "baseline": record.baseline,
    }


def _repeated(record: RunRecord) -> bool:
    """More than one attempt per case and model: agreement and flips are worth showing."""
    return record.trials > 1


def describe(record: RunRecord, now: float, crashed: str = "") -> list[str]:
    """The lines ``status`` prints (``crashed``: why the run's driver is gone, if it is)."""
    counts = ", ".join(
        f"{record.count(v)} {v.value}"
        for v in Verdict
        if v is not Verdict.INTERRUPTED or record.count(v)
    )
    models = ", ".join(
        f"{m.model} {m.passed}/{m.total}" for m in tally(record.attempts, record.models)
    )
    end = record.finished_at if record.finished_at is not None else now
    timing = f"{format_span(end - record.started_at)} (started {format_time(record.started_at)}"
    if record.state is RunState.RUNNING and record.updated_at is not None:
        timing += f", last written {format_span(now - record.updated_at)} ago"
    timing += ")"
    lines = [
        f"run       {record.run_id} ({record.kind.value})",
        f"state     {shown_state(record, crashed)}"
        + (f" (the record says running, but {crashed})" if crashed else ""),
        f"progress  {record.completed}/{record.total} attempts",
        f"verdicts  {counts}",
        f"models    {models or '-'}",
        f"elapsed   {timing}",
        f"commit    {record.commit or '-'}  (evaltape {record.version})",
    ]
    if crashed:
        lines.append(
            f"recover   {recover_hint(record)}  (history line, interrupted attempts, "
            "partial sessions, workspaces)"
        )
    if record.purpose:
        lines.append(f"purpose   {record.purpose}")
    if record.gate:
        blocked = " (blocked: never a baseline)" if record.gate_blocked else ""
        accepted = " (accepted with --accept-baseline)" if record.baseline_accepted else ""
        against = f" against {record.baseline}" if record.baseline else ""
        lines.append(f"gate      {record.gate}{blocked}{accepted}{against}")
    lines.extend(f"note      {note}" for note in record.notes)
    if _repeated(record):
        lines.extend(render_flips(summarize_flips(record.attempts)))
    return lines


EXAMPLE = """\b
Example:
  evaltape status latest --json
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Show the state and progress of RUN (default: latest).",
    epilog=EXAMPLE,
)
@click.argument("run", default="latest", metavar="[RUN]")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@config_options("results")
@boundary
def status(run: str, as_json: bool, config: Config) -> None:
    """Show the state and progress of RUN (default: latest).

    RUN is "latest", a run id, a unique prefix of one, or the path of a run
    record.  A run still in progress shows how many attempts are done so far; a
    run whose driver died (its pid gone, or no heartbeat for 30 s) shows as
    crashed, with the "evaltape recover RUN" command that closes it.  Exits 2
    when no run matches (or a prefix matches several).
    """
    try:
        path = resolve_run(config.results, run)
    except UnknownRun as exc:
        fail(str(exc), code=2)
        return
    record = read_record(path)
    now = time.time()
    crashed = crash_reason(record, now=now)
    if as_json:
        click.echo(json.dumps(summary(record, now, crashed), sort_keys=True))
        return
    for line in describe(record, now, crashed):
        click.echo(line)
