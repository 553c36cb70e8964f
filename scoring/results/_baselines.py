"""Baselines: saved snapshots of a run that later runs are compared against.

A baseline is a plain JSON file, meant to be committed next to the suites:
``<suites>/baselines/<name>.json`` is the latest pointer (what ``--baseline
NAME`` reads) and ``<suites>/baselines/history/<name>/<stamp>-<commit>.json``
keeps every save, so the timeline of one baseline can be read back.  A
baseline holds one model's attempts, each with its case, verdict and the
case definition's fingerprint, so a comparison is paired case by case.

Without a saved name, the gate's baseline is implicit: the last finished live
runs on the same model that did not close the gate (``eligible_runs``; the gate
pools them, ``_gate_history``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs

from ._history import read_history
from ._record_files import read_json, read_record, record_path, write_atomic
from ._record_json import Fields, attempt_from_json, attempt_to_json
from ._records import (
    AttemptResult,
    RecordError,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
)

SCHEMA = 1
"""Version of the baseline JSON this evaltape writes and the newest it reads."""

BASELINES_DIR = "baselines"
"""Folder under the suites folder that holds the latest pointers."""

HISTORY_DIR = "history"
"""Folder under ``baselines/`` holding every saved copy, one folder per name."""

NOT_BASELINES = frozenset({"entry_check", "ab"})
"""Run purposes that never serve as a baseline: they run a chosen subset."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class BaselineError(RecordError):
    """A baseline could not be found, read, written, or used."""


@attrs.frozen(kw_only=True)
class Baseline:
    """One saved snapshot: a model's attempts in one run."""

    name: str
    """The baseline's name (its file stem)."""
    model: str
    """The model the attempts ran with; a baseline of another model is refused."""
    suites: tuple[str, ...]
    """Suites the run covered."""
    run_id: str
    """The run it was taken from."""
    commit: str
    """The harness commit of that run; "" when unknown."""
    saved_at: float
    """Unix time of the save."""
    trials: int
    """Attempts per case in that run."""
    accepted: bool
    """The run closed the gate and was waved through with ``--accept-baseline``."""
    attempts: tuple[AttemptResult, ...]
    """The model's attempts."""
    path: Path | None = None
    """The file it was read from; None for one not yet saved."""

    @property
    def passed(self) -> int:
        """Attempts that passed."""
        return sum(1 for a in self.attempts if a.verdict is Verdict.PASSED)

    @property
    def judged(self) -> int:
        """Attempts that were judged (skipped ones are not)."""
        return sum(1 for a in self.attempts if a.verdict.judged)


def default_name(suites: Sequence[str], model: str) -> str:
    """``<suites joined by +>-<model>``, with characters unsafe in a file name replaced."""
    stem = "+".join(sorted(suites)) or "all"
    return re.sub(r"[^A-Za-z0-9._+-]", "_", f"{stem}-{model}")


def check_name(name: str) -> str:
    """``name`` if it is usable as a file stem, else ``BaselineError``."""
    if not _NAME.match(name) or name in (".", ".."):
        raise BaselineError(
            f'baseline name "{name}": use letters, digits, ".", "_", "+" or "-" '
            "(starting with a letter or digit)"
        )
    return name


def from_record(record: RunRecord, model: str, name: str, *, saved_at: float) -> Baseline:
    """The baseline ``name`` holding ``model``'s attempts in ``record``."""
    attempts = tuple(a for a in record.attempts if a.model == model)
    if not attempts:
        raise BaselineError(f"run {record.run_id} has no attempts with model {model}")
    return Baseline(
        name=check_name(name),
        model=model,
        suites=record.suites,
        run_id=record.run_id,
        commit=record.commit,
        saved_at=saved_at,
        trials=record.trials,
        accepted=record.baseline_accepted,
        attempts=attempts,
    )


def _to_json(b: Baseline) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "name": b.name,
        "model": b.model,
        "suites": list(b.suites),
        "run_id": b.run_id,
        "commit": b.commit,
        "saved_at": b.saved_at,
        "trials": b.trials,
        "accepted": b.accepted,
        "attempts": [attempt_to_json(a) for a in b.attempts],
    }


def _from_json(data: object, path: Path) -> Baseline:
    where = str(path)
    f = Fields(data, where)
    f.schema(SCHEMA, "baseline")
    saved_at = f.number("saved_at")
    assert saved_at is not None
    return Baseline(
        name=f.text("name"),
        model=f.text("model"),
        suites=f.texts("suites"),
        run_id=f.text("run_id"),
        commit=f.text("commit"),
        saved_at=saved_at,
        trials=f.whole("trials"),
        accepted=f.flag("accepted"),
        attempts=tuple(
            attempt_from_json(item, f"{where}: attempts[{i}]")
            for i, item in enumerate(f.array("attempts"))
        ),
        path=path,
    )


def _stamp(at: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(at))


def save(folder: Path, baseline: Baseline) -> tuple[Path, Path]:
    """Write the dated copy, then refresh the latest pointer; returns both paths.

    The dated copy is written first, so a crash between the two leaves the
    history complete and the pointer one save behind, never ahead.
    """
    text = json.dumps(_to_json(baseline), indent=1) + "\n"
    tail = f"-{baseline.commit}" if baseline.commit else ""
    dated = folder / HISTORY_DIR / baseline.name / f"{_stamp(baseline.saved_at)}{tail}.json"
    latest = folder / f"{baseline.name}.json"
    write_atomic(dated, text)
    write_atomic(latest, text)
    return latest, dated


def read(path: Path) -> Baseline:
    """Read one baseline file; ``BaselineError`` names the file and the field."""
    if not path.exists():
        raise BaselineError(f"{path}: no such baseline file")
    try:
        return _from_json(read_json(path), path)
    except BaselineError:
        raise
    except RecordError as exc:
        raise BaselineError(str(exc)) from exc


def load(folder: Path, name: str) -> Baseline:
    """The latest snapshot of ``name``; an unknown name lists the ones that exist."""
    path = folder / f"{check_name(name)}.json"
    if not path.is_file():
        known = [b.stem for b in sorted(folder.glob("*.json"))] if folder.is_dir() else []
        shown = ", ".join(known) if known else "none saved yet"
        raise BaselineError(f'no baseline "{name}" in {folder} (saved: {shown})')
    return read(path)


def latest_all(folder: Path) -> tuple[Baseline, ...]:
    """Every latest pointer, by name."""
    if not folder.is_dir():
        return ()
    return tuple(read(p) for p in sorted(folder.glob("*.json")))


def timeline(folder: Path, name: str) -> tuple[Baseline, ...]:
    """Every saved copy of ``name``, newest first."""
    check_name(name)
    where = folder / HISTORY_DIR / name
    if not where.is_dir():
        raise BaselineError(f'no history for baseline "{name}" in {where.parent}')
    return tuple(read(p) for p in sorted(where.glob("*.json"), reverse=True))


def refuse_other_model(baseline: Baseline, model: str) -> None:
    """``BaselineError`` unless ``baseline`` ran with ``model``."""
    if baseline.model != model:
        raise BaselineError(
            f'baseline "{baseline.name}" ran with model {baseline.model}, this run with '
            f"{model}: a baseline from another model is refused (save one for {model} "
            "or omit --baseline)"
        )


@attrs.frozen(kw_only=True)
class Prior:
    """A previous run that serves as the implicit baseline for one model."""

    record: RunRecord
    """The run."""
    attempts: tuple[AttemptResult, ...]
    """Its attempts with the model."""


def eligible_runs(
    results: Path,
    model: str,
    *,
    exclude: str = "",
    on_problem: Callable[[str], None] | None = None,
) -> Iterator[Prior]:
    """Finished live runs with ``model`` that may serve as a baseline, newest first.

    Runs are taken from the history; a blocked run (``gate_blocked``) is
    skipped unless it was waved through with ``--accept-baseline``; entry
    checks and A/B runs never count.  A run whose record cannot be read is
    reported to ``on_problem`` and skipped.
    """
    entries = read_history(results, (lambda p: on_problem(p.message)) if on_problem else None)
    for entry in reversed(entries):
        if entry.run_id == exclude or entry.kind is not RunKind.LIVE:
            continue
        if entry.state is not RunState.COMPLETED:
            continue
        if not any(t.model == model and t.total for t in entry.models):
            continue
        try:
            record = read_record(record_path(results, entry.run_id))
        except RecordError as exc:
            if on_problem is not None:
                on_problem(str(exc))
            continue
        if record.purpose in NOT_BASELINES:
            continue
        if record.gate_blocked and not record.baseline_accepted:
            continue
        yield Prior(record=record, attempts=tuple(a for a in record.attempts if a.model == model))
