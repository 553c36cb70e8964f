"""``evaltape lint``: refuse tapes, run records and history that hold secret-shaped strings.

Detection is the recorder's redaction rules (``recorder.redact.Redactor``), so lint
flags exactly what recording would have masked.  Exit codes: 0 clean, 1 a
secret was found, 2 a tape could not be read (fully or at all).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import click

from evaltape.recorder import TapeError, TapeReader
from evaltape.recorder._shared import MAX_TAPE_BYTES, secret_preview
from evaltape.recorder.redact import Redactor, default_redactor
from evaltape.recorder.tape import Note

from .._config import Config
from ..outputs.console._live import render_volatile
from ..run._volatile_tapes import volatile_in_tapes
from ._options import config_options

EXIT_SECRET = 1
EXIT_UNREADABLE = 2


def tape_files(paths: tuple[str, ...]) -> Iterator[Path]:
    """The files named, and every ``*.tape``, run record and history under the directories named."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.tape") if p.is_file())
            yield from run_files(path)
        else:
            yield path


EXAMPLE = """\b
Example:
  evaltape lint cassettes/
"""
"""The example ``--help`` ends with."""


@click.command(
    short_help="Check that the tapes in PATHS hold no secrets.",
    epilog=EXAMPLE,
)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--volatile",
    is_flag=True,
    help="Instead of secrets, list scrub rules proposed for text in the tapes' first requests "
    "that differs between attempts of a case, or names the day it was recorded (exit 1 when "
    "any is found); the config's scrub rules are applied first.",
)
@config_options("scrub")
@click.option(
    "--pattern",
    "patterns",
    multiple=True,
    metavar="REGEX",
    help="Also flag strings matching REGEX (repeatable).",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME",
    help="Also flag any value of header NAME (repeatable).",
)
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="REGEX",
    help="Never flag a secret that fully matches REGEX (repeatable).",
)
def lint(
    paths: tuple[str, ...],
    volatile: bool,
    config: Config,
    patterns: tuple[str, ...],
    headers: tuple[str, ...],
    allow: tuple[str, ...],
) -> None:
    """Check that the tapes in PATHS hold no secrets.

    PATHS are tape files, run records (*.json), history files (*.jsonl) or
    directories (searched recursively for *.tape, runs/*.json, history.jsonl).
    Every event is scanned: URLs, headers, bodies (decoded when gzip, deflate
    or zstd), workspace files, harness event fields and session metadata.
    Each finding prints as ``file: session S event N: KIND at WHERE: PREVIEW``
    with only a masked preview of the secret.  Exits 1 if anything is found,
    2 if a tape is unreadable, corrupt or decodes past 1 GiB (all its sessions
    together), 0 otherwise.

    With --volatile, lists the scrub rules proposed for volatile text (dates,
    ids, anything that differs between attempts of one case) in the first
    requests of the live sessions, as lines to paste into the config.
    """
    if volatile:
        _volatile(paths, config)
        return
    try:
        redactor = default_redactor().extended(headers=headers, patterns=patterns, allow=allow)
    except TapeError as exc:
        click.echo(f"evaltape: error: {exc}", err=True)
        raise SystemExit(EXIT_UNREADABLE) from exc
    findings = tapes = sessions = events = 0
    unreadable = False
    for path in tape_files(paths):
        if path.suffix in TEXT_SUFFIXES:
            try:
                findings += lint_text(path, redactor)
            except OSError as exc:
                click.echo(f"evaltape: error: {path}: cannot read: {exc.strerror}", err=True)
                unreadable = True
            continue
        tapes += 1
        try:
            found, n_sessions, n_events, bad = _lint_one(str(path), redactor)
        except TapeError as exc:
            click.echo(f"evaltape: error: {exc}", err=True)
            unreadable = True
            continue
        except OSError as exc:
            click.echo(f"evaltape: error: {path}: cannot read: {exc.strerror}", err=True)
            unreadable = True
            continue
        except MemoryError:
            click.echo(f"evaltape: error: {path}: out of memory reading it", err=True)
            unreadable = True
            continue
        findings += found
        sessions += n_sessions
        events += n_events
        unreadable = unreadable or bad
    summary = f"{tapes} tapes, {sessions} sessions, {events} events"
    if findings:
        click.echo(f"evaltape lint: {findings} secrets found ({summary})", err=True)
    elif not unreadable:
        click.echo(f"evaltape lint: no secrets in {summary}")
    if unreadable:
        raise SystemExit(EXIT_UNREADABLE)
    if findings:
        raise SystemExit(EXIT_SECRET)


def _volatile(paths: tuple[str, ...], config: Config) -> None:
    tapes = [p for p in tape_files(paths) if p.suffix not in TEXT_SUFFIXES]
    missing = [p for p in tapes if not p.is_file()]
    if missing:
        click.echo(f"evaltape: error: {missing[0]}: no such tape file", err=True)
        raise SystemExit(EXIT_UNREADABLE)
    proposals = volatile_in_tapes(tapes, rules=config.scrub)
    if not proposals:
        click.echo(f"evaltape lint: no volatile text in the first requests of {len(tapes)} tapes")
        return
    for line in render_volatile(proposals):
        click.echo(line)
    raise SystemExit(EXIT_SECRET)


def _lint_one(path: str, redactor: Redactor) -> tuple[int, int, int, bool]:
    """Scan one tape; return (findings, sessions, events, could-not-read-all)."""
    bad = False

    def note(n: Note) -> None:
        nonlocal bad
        if n.kind in ("corrupt", "skipped"):
            bad = True
            click.echo(f"evaltape: error: {n.message}", err=True)
        else:
            click.echo(f"evaltape: {n.kind}: {n.message}", err=True)

    if not os.path.isfile(path):
        raise TapeError(f"{path}: no such tape file")
    reader = TapeReader(path, strict=False, on_note=note, tape_limit=MAX_TAPE_BYTES)
    found = sessions = events = 0
    for session in reader.sessions():
        sessions += 1
        for index, event in enumerate(session.events):
            events += 1
            for hit in redactor.scan_event(event):
                found += 1
                click.echo(
                    f"{path}: session {session.session_id} event {index}: "
                    f"{hit.kind} at {hit.where}: {secret_preview(hit.secret)}"
                )
    return found, sessions, events, bad


TEXT_SUFFIXES = (".json", ".jsonl")
"""Files lint reads as text (run records, history) rather than as tapes."""


def run_files(folder: Path) -> Iterator[Path]:
    """Run records (``runs/*.json``) and history indexes (``history.jsonl``) under ``folder``."""
    found = [p for p in folder.rglob("*.json") if p.parent.name == "runs"]
    found += list(folder.rglob("history.jsonl"))
    yield from sorted(p for p in found if p.is_file())


def lint_text(path: Path, redactor: Redactor) -> int:
    """Print each secret in the text file ``path`` as ``file:line: KIND: PREVIEW``; return
    how many.  ``OSError`` if it cannot be read."""
    found = 0
    with path.open("rb") as f:
        for number, line in enumerate(f, start=1):
            for hit in redactor.scan_bytes(line):
                found += 1
                secret = line[hit.start : hit.end].decode("utf-8", "replace")
                click.echo(f"{path}:{number}: {hit.kind}: {secret_preview(secret)}")
    return found
