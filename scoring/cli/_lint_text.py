"""``evaltape lint`` over the text files a run writes: run records and the history index.

A run record (``runs/*.json``) and ``history.jsonl`` are redacted when
written; lint checks that they are, line by line, with the same rules it
applies to tapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from evaltape.recorder import Redactor, secret_preview

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
