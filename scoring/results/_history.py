"""The history index: one JSON line per finished run in ``<results>/history.jsonl``.

Each line is appended with a single ``write`` on a file opened ``O_APPEND``
and then fsynced, so runs finishing at the same time in different processes
never interleave inside a line.  Reading skips (and reports) a damaged line
instead of hiding the rest.  ``RunLog`` is the writer a run holds: it keeps
the run's record file current and appends the history line when it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from evaltape.recorder.redact import Redactor, default_redactor

from ._record_files import record_path, write_record
from ._record_json import Fields
from ._records import (
    AttemptResult,
    Inconsistency,
    ModelTally,
    RecordError,
    RunKind,
    RunRecord,
    RunState,
    inconsistent_cases,
    tally,
)

HISTORY_FILE = "history.jsonl"
"""Name of the history index inside the results folder."""

HISTORY_SCHEMA = 1
"""Version of the history-line JSON this evaltape writes and the newest it reads."""


@attrs.frozen(kw_only=True)
class HistoryEntry:
    """The summary of one finished run, as one history line."""

    run_id: str
    """The run's id; its record is ``runs/<run id>.json``."""
    kind: RunKind
    """Live, replay or rescore."""
    state: RunState
    """How the run ended."""
    commit: str
    """Short git commit of the harness; "" when unknown."""
    version: str
    """The evaltape version that ran it."""
    started_at: float
    """Unix time the run started."""
    finished_at: float
    """Unix time the run ended."""
    models: tuple[ModelTally, ...]
    """Passed/total attempts per model."""
    inconsistent: tuple[Inconsistency, ...]
    """Cases whose attempts with one model disagreed."""
    gate: str = ""
    """The gate's decision ("open", "closed", "run zero", "no baseline"); "" when the run was
    not gated."""
    gate_blocked: bool = False
    """The gate closed on the run and it was not accepted: never a baseline."""


def entry_from_record(record: RunRecord) -> HistoryEntry:
    """Summarize a finished record as its history line."""
    return HistoryEntry(
        run_id=record.run_id,
        kind=record.kind,
        state=record.state,
        commit=record.commit,
        version=record.version,
        started_at=record.started_at,
        finished_at=record.finished_at if record.finished_at is not None else record.started_at,
        models=tally(record.attempts, record.models),
        inconsistent=inconsistent_cases(record.attempts),
        gate=record.gate,
        gate_blocked=record.gate_blocked,
    )


def entry_to_json(e: HistoryEntry) -> dict[str, object]:
    """The plain-dict form of a history line."""
    return {
        "schema": HISTORY_SCHEMA,
        "run_id": e.run_id,
        "kind": e.kind.value,
        "state": e.state.value,
        "commit": e.commit,
        "version": e.version,
        "started_at": e.started_at,
        "finished_at": e.finished_at,
        "models": [{"model": m.model, "passed": m.passed, "total": m.total} for m in e.models],
        "inconsistent": [
            {
                "suite": i.suite,
                "case": i.case_id,
                "model": i.model,
                "passed": i.passed,
                "total": i.total,
            }
            for i in e.inconsistent
        ],
        "gate": e.gate,
        "gate_blocked": e.gate_blocked,
    }


def entry_from_json(data: object, where: str) -> HistoryEntry:
    """Read one history line's dict; raises ``RecordError`` naming ``where`` and the field."""
    f = Fields(data, where)
    f.schema(HISTORY_SCHEMA, "history line")
    models = []
    for n, item in enumerate(f.array("models")):
        m = Fields(item, f"{where}: models[{n}]")
        models.append(
            ModelTally(model=m.text("model"), passed=m.whole("passed"), total=m.whole("total"))
        )
    gaps = []
    for n, item in enumerate(f.array("inconsistent")):
        g = Fields(item, f"{where}: inconsistent[{n}]")
        gaps.append(
            Inconsistency(
                suite=g.text("suite"),
                case_id=g.text("case"),
                model=g.text("model"),
                passed=g.whole("passed"),
                total=g.whole("total"),
            )
        )
    kind = f.member("kind", RunKind)
    state = f.member("state", RunState)
    started = f.number("started_at")
    finished = f.number("finished_at")
    assert kind is not None and state is not None and started is not None and finished is not None
    return HistoryEntry(
        run_id=f.text("run_id"),
        kind=kind,
        state=state,
        commit=f.text("commit"),
        version=f.text("version"),
        started_at=started,
        finished_at=finished,
        models=tuple(models),
        inconsistent=tuple(gaps),
        gate=f.text("gate") if "gate" in f.data else "",
        gate_blocked=f.flag("gate_blocked") if "gate_blocked" in f.data else False,
    )


def history_path(results: Path) -> Path:
    """Where the history index lives."""
    return results / HISTORY_FILE


def append_history(results: Path, entry: HistoryEntry, redactor: Redactor | None = None) -> None:
    """Append ``entry`` as one line, redacted like a record: ``O_APPEND``, a single write, fsync.

    If the file ends in a torn line (a writer killed mid-write), the new
    line starts on a fresh line so only the torn one is lost.
    """
    path = history_path(results)
    text = json.dumps(entry_to_json(entry), separators=(",", ":")) + "\n"
    line = (redactor or default_redactor()).redact_text(text).encode("utf-8")
    try:
        results.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and _last_byte(path, size) != b"\n":
                line = b"\n" + line
            written = os.write(fd, line)
            while written < len(line):  # a short write on a regular file: disk full, signal
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise RecordError(f"{path}: cannot append: {exc.strerror or exc}") from exc


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(size - 1)
        return handle.read(1)


@attrs.frozen(kw_only=True)
class HistoryProblem:
    """A history line that could not be read."""

    line: int
    """1-based line number in ``history.jsonl``."""
    message: str
    """What is wrong with it, prefixed ``history.jsonl:LINE:``."""


def read_history(
    results: Path, on_problem: Callable[[HistoryProblem], None] | None = None
) -> tuple[HistoryEntry, ...]:
    """Every readable history line, oldest first; damaged lines go to ``on_problem``.

    Without ``on_problem`` the first damaged line raises ``RecordError``.
    A missing file is an empty history.
    """
    path = history_path(results)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    entries: list[HistoryEntry] = []
    for number, raw in _lines(data):
        where = f"{HISTORY_FILE}:{number}"
        try:
            try:
                decoded = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise RecordError(f"{where}: not UTF-8 text at byte {exc.start}") from exc
            except json.JSONDecodeError as exc:
                raise RecordError(
                    f"{where}: invalid JSON at column {exc.colno}: {exc.msg}"
                ) from exc
            entries.append(entry_from_json(decoded, where))
        except RecordError as exc:
            if on_problem is None:
                raise
            on_problem(HistoryProblem(line=number, message=str(exc)))
    return tuple(entries)


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            yield number, raw


HEARTBEAT = 5.0
"""Seconds between a running run's heartbeats (its record rewritten with ``heartbeat_at``)."""


class RunLog:
    """Keeps a run's record file current while the run is in progress.

    ``start()`` writes the record, stamped with this process's id and host
    name; ``add()`` appends an attempt and rewrites the file at once (so each
    finished attempt is on disk before the next one is reported), unless
    ``interval`` seconds by ``clock`` have not passed since the last write;
    ``finish()`` always writes the final record and appends the history line.
    With ``heartbeat`` (seconds), a thread rewrites the record that often with
    a fresh ``heartbeat_at`` until the run finishes, so a reader can tell a
    live run from one whose driver died (``run_health``).  ``add`` may be
    called from several threads.
    """

    def __init__(
        self,
        results: Path,
        record: RunRecord,
        *,
        clock: Callable[[], float],
        interval: float = 0.0,
        redactor: Redactor | None = None,
        heartbeat: float | None = None,
    ) -> None:
        self.results = results
        """The results folder."""
        self._redactor = redactor
        self._record = record
        self._attempts: list[AttemptResult] = list(record.attempts)
        self._clock = clock
        self._interval = interval
        self._heartbeat = heartbeat
        self._beats: threading.Thread | None = None
        self._stop_beating = threading.Event()
        self._last_write: float | None = None
        self._lock = threading.Lock()
        self._finished = False
        self.writes = 0
        """How many times the record file has been written."""

    @property
    def path(self) -> Path:
        """The record file."""
        return record_path(self.results, self._record.run_id)

    @property
    def record(self) -> RunRecord:
        """The record as it stands, with every attempt added so far."""
        with self._lock:
            return attrs.evolve(self._record, attempts=tuple(self._attempts))

    def start(self) -> RunRecord:
        """Write the initial record (normally in state running), stamped with this
        process's id and host name, and start the heartbeat (if asked for)."""
        with self._lock:
            self._record = attrs.evolve(self._record, pid=os.getpid(), host=socket.gethostname())
            written = self._write(self._clock())
        if self._heartbeat is not None and self._beats is None:
            self._beats = threading.Thread(
                target=self._beat, args=(self._heartbeat,), name="evaltape-heartbeat", daemon=True
            )
            self._beats.start()
        return written

    def _beat(self, every: float) -> None:
        while not self._stop_beating.wait(every):
            with self._lock:
                if self._finished:
                    return
                # A full disk: the next beat tries again; the run goes on.
                with contextlib.suppress(RecordError):
                    self._write(self._clock())

    def add(self, attempt: AttemptResult) -> None:
        """Record one finished attempt; rewrites the file unless ``interval`` has not passed."""
        with self._lock:
            self._check_open()
            self._attempts.append(attempt)
            now = self._clock()
            if self._last_write is None or now - self._last_write >= self._interval:
                self._write(now)

    def flush(self) -> RunRecord:
        """Write the record now, whatever the interval."""
        with self._lock:
            return self._write(self._clock())

    def update(self, **fields: Any) -> RunRecord:
        """Set run-level fields (``gate``, ``purpose``, ...) and write the record now."""
        if "attempts" in fields:
            raise ValueError("attempts are added with add(), not update()")
        with self._lock:
            self._check_open()
            self._record = attrs.evolve(self._record, **fields)
            return self._write(self._clock())

    def finish(self, state: RunState, *, notes: Sequence[str] = ()) -> RunRecord:
        """Write the final record in ``state``, append its history line, and return it."""
        if state is RunState.RUNNING:
            raise ValueError("finish() needs a final state, not running")
        self._stop_beating.set()
        with self._lock:
            self._check_open()
            now = self._clock()
            self._record = attrs.evolve(
                self._record, state=state, finished_at=now, notes=(*self._record.notes, *notes)
            )
            final = self._write(now)
            self._finished = True
        append_history(self.results, entry_from_record(final), self._redactor)
        return final

    def _check_open(self) -> None:
        if self._finished:
            raise RuntimeError(f"run {self._record.run_id} is already finished")

    def _write(self, now: float) -> RunRecord:
        beat = now if self._heartbeat is not None and not self._finished else None
        current = attrs.evolve(
            self._record,
            attempts=tuple(self._attempts),
            updated_at=now,
            heartbeat_at=beat if beat is not None else self._record.heartbeat_at,
        )
        write_record(self.results, current, self._redactor)
        self._last_write = now
        self.writes += 1
        return current
