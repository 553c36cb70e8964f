"""Run records on disk: atomic writes, reading back, and resolving a run id or prefix."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from evaltape.recorder.redact import Redactor, default_redactor

from ._record_json import record_from_json, record_to_json
from ._records import RUNS_DIR, RecordError, RunRecord


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: temp file in the same folder, fsync, ``os.replace``.

    A concurrent reader sees the old file or the new one, never a partial one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise RecordError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def record_path(results: Path, run_id: str) -> Path:
    """Where the record of ``run_id`` lives."""
    return results / RUNS_DIR / f"{run_id}.json"


def write_record(results: Path, record: RunRecord, redactor: Redactor | None = None) -> Path:
    """Write ``record`` atomically to ``<results>/runs/<run id>.json``; returns the path.

    The JSON text is redacted first (``redactor``, default the built-in rules):
    masks keep their length and hold only letters and ``*``, so it stays valid."""
    path = record_path(results, record.run_id)
    text = json.dumps(record_to_json(record), indent=1) + "\n"
    write_atomic(path, (redactor or default_redactor()).redact_text(text))
    return path


def read_json(path: Path) -> Any:
    """The decoded JSON of one file; ``RecordError`` names the file, line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8 text at byte {exc.start}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc


def read_record(path: Path) -> RunRecord:
    """Read one run record file; raises ``RecordError`` naming the file and field."""
    return record_from_json(read_json(path), str(path))


class UnknownRun(RecordError):
    """No run matches what was asked for (or a prefix matches several)."""


def resolve_run(results: Path, spec: str = "latest") -> Path:
    """The record file ``spec`` names: ``latest``, a run id, a unique id prefix, or a path.

    A path is anything with a ``/`` or ending in ``.json``; a bare file name is
    also looked up in ``runs/``.  Raises ``UnknownRun``.
    """
    runs = results / RUNS_DIR
    if spec != "latest" and (os.sep in spec or "/" in spec or spec.endswith(".json")):
        path = Path(spec)
        if path.is_file():
            return path
        if path.name == spec and (runs / spec).is_file():  # a bare file name in runs/
            return runs / spec
        raise UnknownRun(f"{spec}: no such run record")
    ids = sorted(p.stem for p in runs.glob("*.json")) if runs.is_dir() else []
    if spec == "latest":
        if not ids:
            raise UnknownRun(f"no runs recorded in {runs}")
        return runs / f"{ids[-1]}.json"
    if spec in ids:
        return runs / f"{spec}.json"
    matches = [i for i in ids if i.startswith(spec)]
    if len(matches) == 1:
        return runs / f"{matches[0]}.json"
    if not matches:
        raise UnknownRun(f'no run "{spec}" in {runs}')
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise UnknownRun(f'run prefix "{spec}" is ambiguous: {len(matches)} runs match ({shown})')
