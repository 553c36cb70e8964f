"""Run records: what every run (live, replay, rescore) writes, as values and as files.

A run writes ``<results>/runs/<run id>.json`` while it runs (``RunLog`` in
``scoring._history``), so ``evaltape status`` can show its progress, and one
line in ``<results>/history.jsonl`` when it ends.  Every write
replaces the file atomically: a reader sees the previous version or the new
one, never a mix.  The JSON mapping sits beside the values as plain functions,
with a schema version; a newer schema is refused, never guessed at.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from evaltape.recorder import VERSION, Usage
from evaltape.scoring._errors import ScoringError

SCHEMA = 1
"""Version of the run-record JSON this evaltape writes and the newest it reads."""

RUNS_DIR = "runs"
"""Folder under the results folder that holds one ``<run id>.json`` per run."""

E = TypeVar("E", bound=enum.Enum)


class RecordError(ScoringError):
    """A run record or history line could not be read, written or found."""


class Verdict(enum.Enum):
    """The outcome of one attempt."""

    PASSED = "passed"
    """Every check held."""
    FAILED = "failed"
    """A check failed; ``reason`` names the first one."""
    ERROR = "error"
    """The attempt could not be judged: infrastructure failure, timeout, crash."""
    SKIPPED = "skipped"
    """Not run (for example, a replay with no recorded tape for the case)."""


class RunKind(enum.Enum):
    """How a run (and each of its attempts) obtained its sessions."""

    LIVE = "live"
    """Real model calls, each recorded to a tape."""
    REPLAY = "replay"
    """The agent ran again against a tape's recorded model responses."""
    RESCORE = "rescore"
    """Recorded sessions scored again; nothing ran."""


class RunState(enum.Enum):
    """Where a run is in its life."""

    RUNNING = "running"
    """Attempts are still being added."""
    COMPLETED = "completed"
    """Every planned attempt finished (whatever the verdicts)."""
    FAILED = "failed"
    """The run stopped early on an error of its own."""
    CANCELLED = "cancelled"
    """Someone stopped the run (Ctrl-C, a CI timeout)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


@attrs.frozen(kw_only=True)
class AttemptResult:
    """One attempt at one case with one model: its verdict and where its evidence lives."""

    case_id: str
    """The case's id."""
    suite: str
    """The case's suite."""
    model: str
    """The model under test."""
    attempt: int
    """Zero-based attempt index among the case's trials."""
    verdict: Verdict
    """The outcome."""
    reason: str = attrs.field(default="", converter=_one_line)
    """One line: why it did not pass (empty when it passed); newlines are folded."""
    usage: Usage = attrs.field(factory=Usage)
    """Token counts summed over the attempt's model calls."""
    duration: float = 0.0
    """Seconds the attempt took."""
    tape: str = ""
    """The tape holding the session, relative to the results or cassettes folder; "" if none."""
    session_id: str = ""
    """The session's id within ``tape``."""
    mode: RunKind = RunKind.LIVE
    """How this attempt's session was obtained."""
    tainted: bool = False
    """The evidence is unreliable (infrastructure error, damaged tape); kept out of statistics."""
    quarantined: bool = False
    """The case is quarantined: reported, but kept out of the gate."""
    known_gap: bool = False
    """The case is a known gap: expected to fail today."""
    rescored: Verdict | None = None
    """Replay only: the recorded session scored with today's scorers."""
    replayed: Verdict | None = None
    """Replay only: the session today's harness produced from the recorded model outputs."""
    cost: float | None = None
    """USD for the agent's model calls (provider-reported where given); None when unknown."""
    judge_usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge spent grading this attempt; never added to ``usage``."""
    judge_cost: float | None = None
    """USD the judge spent grading this attempt; None when unknown or not judged."""
    judge_score: float | None = None
    """The judge's 0-5 score; None when not judged or unscored."""
    fingerprint: str = ""
    """The case definition's fingerprint when it ran (an edited case gets a new one)."""
    outputs_digest: str = ""
    """Digest of the model's outputs in the session (what the model said and called)."""
    effects_digest: str = ""
    """Digest of what the harness did with them (tool results and the outcome checked)."""


@attrs.frozen(kw_only=True)
class RunRecord:
    """One run: what it set out to do, how far it got, and every attempt's result."""

    run_id: str
    """Sortable id, ``YYYYMMDDTHHMMSSZ-<6 hex>`` (see ``make_run_id``)."""
    kind: RunKind
    """Live, replay or rescore."""
    state: RunState
    """Running, completed, failed or cancelled."""
    started_at: float
    """Unix time the run started."""
    finished_at: float | None = None
    """Unix time the run ended; None while it runs."""
    updated_at: float | None = None
    """Unix time the record was last written; shows whether a running run is alive."""
    commit: str = ""
    """Short git commit of the harness (``git_commit``); "" outside a git repository."""
    version: str = VERSION
    """The evaltape version that wrote the record."""
    models: tuple[str, ...] = ()
    """Models under test."""
    suites: tuple[str, ...] = ()
    """Suites selected."""
    trials: int = 1
    """Attempts per case and model."""
    total: int = 0
    """Attempts planned."""
    attempts: tuple[AttemptResult, ...] = ()
    """Results so far, in the order they finished."""
    notes: tuple[str, ...] = ()
    """Free-form lines (why it failed or was cancelled, flags worth remembering)."""
    purpose: str = ""
    """Why the run was started: "" (ordinary), "gate", "entry_check" or "scoreboard"."""
    gate: str = ""
    """The gate's decision: "open", "closed", "run zero", or "" when the run was not gated."""
    gate_blocked: bool = False
    """The gate closed on this run; it never becomes a baseline."""
    baseline_accepted: bool = False
    """The gate closed but ``--accept-baseline`` waved the run through."""
    baseline: str = ""
    """The run id (or saved baseline name) the gate compared against; "" for none."""
    exported: tuple[str, ...] = ()
    """Attempt keys (``attempt_key``) already exported as traces; each is exported once."""

    @property
    def completed(self) -> int:
        """Attempts finished so far."""
        return len(self.attempts)

    def count(self, verdict: Verdict) -> int:
        """How many attempts ended with ``verdict``."""
        return sum(1 for a in self.attempts if a.verdict is verdict)


@attrs.frozen(kw_only=True)
class ModelTally:
    """Verdict counts of one model's attempts in a run."""

    model: str
    """The model."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts that were judged (skipped ones are not counted)."""


@attrs.frozen(kw_only=True)
class Inconsistency:
    """A case whose attempts with one model disagree: some passed, some did not."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts that were judged."""


def tally(attempts: Iterable[AttemptResult], models: Sequence[str] = ()) -> tuple[ModelTally, ...]:
    """Passed/total per model: ``models`` first (even with no attempts), then any others."""
    counts: dict[str, list[int]] = {m: [0, 0] for m in models}
    for a in attempts:
        if a.verdict is Verdict.SKIPPED:
            counts.setdefault(a.model, [0, 0])
            continue
        row = counts.setdefault(a.model, [0, 0])
        row[0] += a.verdict is Verdict.PASSED
        row[1] += 1
    return tuple(ModelTally(model=m, passed=p, total=t) for m, (p, t) in counts.items())


def inconsistent_cases(attempts: Iterable[AttemptResult]) -> tuple[Inconsistency, ...]:
    """Cases whose judged attempts with one model did not all agree on passing."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for a in attempts:
        if a.verdict is Verdict.SKIPPED:
            continue
        row = groups.setdefault((a.suite, a.case_id, a.model), [0, 0])
        row[0] += a.verdict is Verdict.PASSED
        row[1] += 1
    return tuple(
        Inconsistency(suite=s, case_id=c, model=m, passed=p, total=t)
        for (s, c, m), (p, t) in groups.items()
        if 0 < p < t
    )


def attempt_key(a: AttemptResult) -> str:
    """``suite/case/model/attempt``: names one attempt within a run."""
    return f"{a.suite}/{a.case_id}/{a.model}/{a.attempt}"


def make_run_id(clock: Callable[[], float], random_bytes: Callable[[int], bytes]) -> str:
    """A run id that sorts by start time: ``20261129T231500.042Z-3fa9c1``.

    ``clock`` gives Unix time (``time.time``), ``random_bytes`` entropy
    (``os.urandom``).  Milliseconds keep runs started in the same second in
    order, so ``latest`` is the run started last; the tail keeps ids unique.
    """
    now = clock()
    millis = int(now * 1000) % 1000
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}.{millis:03d}Z-{random_bytes(3).hex()}"


def git_commit(cwd: str | os.PathLike[str]) -> str:
    """``git rev-parse --short HEAD`` in ``cwd``; "" outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# JSON mapping -------------------------------------------------------------


def _usage_json(u: Usage) -> dict[str, object]:
    return {
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cache_read": u.cache_read_tokens,
        "cache_write": u.cache_write_tokens,
        "reasoning": u.reasoning_tokens,
        "reported": u.reported,
    }


def attempt_to_json(a: AttemptResult) -> dict[str, object]:
    """The plain-dict form of an attempt, as stored in a run record."""
    return {
        "case": a.case_id,
        "suite": a.suite,
        "model": a.model,
        "attempt": a.attempt,
        "verdict": a.verdict.value,
        "reason": a.reason,
        "usage": _usage_json(a.usage),
        "duration": a.duration,
        "tape": a.tape,
        "session": a.session_id,
        "mode": a.mode.value,
        "tainted": a.tainted,
        "quarantined": a.quarantined,
        "known_gap": a.known_gap,
        "rescored": a.rescored.value if a.rescored else None,
        "replayed": a.replayed.value if a.replayed else None,
        "cost": a.cost,
        "judge_usage": _usage_json(a.judge_usage),
        "judge_cost": a.judge_cost,
        "judge_score": a.judge_score,
        "fingerprint": a.fingerprint,
        "outputs_digest": a.outputs_digest,
        "effects_digest": a.effects_digest,
    }


def record_to_json(r: RunRecord) -> dict[str, object]:
    """The plain-dict form of a run record, with its schema version."""
    return {
        "schema": SCHEMA,
        "run_id": r.run_id,
        "kind": r.kind.value,
        "state": r.state.value,
        "started_at": r.started_at,
        "finished_at": r.finished_at,
        "updated_at": r.updated_at,
        "commit": r.commit,
        "version": r.version,
        "models": list(r.models),
        "suites": list(r.suites),
        "trials": r.trials,
        "total": r.total,
        "completed": r.completed,
        "attempts": [attempt_to_json(a) for a in r.attempts],
        "notes": list(r.notes),
        "purpose": r.purpose,
        "gate": r.gate,
        "gate_blocked": r.gate_blocked,
        "baseline_accepted": r.baseline_accepted,
        "baseline": r.baseline,
        "exported": list(r.exported),
    }


class Fields:
    """Typed access to one decoded JSON object; every refusal names ``where`` and the field."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, got {_type(data)}")
        self.data: dict[str, Any] = data
        self.where = where

    def _get(self, name: str, types: tuple[type, ...], what: str, optional: bool) -> Any:
        if name not in self.data:
            raise RecordError(f'{self.where}: missing field "{name}"')
        value = self.data[name]
        if value is None and optional:
            return None
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            raise RecordError(f'{self.where}: field "{name}": expected {what}, got {_type(value)}')
        return value

    def text(self, name: str) -> str:
        """A string field."""
        value: str = self._get(name, (str,), "a string", False)
        return value

    def whole(self, name: str) -> int:
        """A whole-number field."""
        value: int = self._get(name, (int,), "a whole number", False)
        return value

    def number(self, name: str, *, optional: bool = False) -> float | None:
        """A number field (``None`` allowed when ``optional``)."""
        value = self._get(name, (int, float), "a number", optional)
        return None if value is None else float(value)

    def flag(self, name: str) -> bool:
        """A boolean field."""
        value: bool = self._get(name, (bool,), "true or false", False)
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        """An array of strings."""
        items: list[Any] = self._get(name, (list,), "an array", False)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise RecordError(
                    f'{self.where}: field "{name}[{i}]": expected a string, got {_type(item)}'
                )
        return tuple(items)

    def array(self, name: str) -> list[Any]:
        """An array, items unchecked."""
        items: list[Any] = self._get(name, (list,), "an array", False)
        return items

    def member(self, name: str, cls: type[E], *, optional: bool = False) -> E | None:
        """A string naming a member of ``cls``."""
        value = self._get(name, (str,), "a string", optional)
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(str(m.value) for m in cls)
            raise RecordError(
                f'{self.where}: field "{name}": expected one of {choices}, got "{value}"'
            ) from None

    def schema(self, newest: int, what: str) -> None:
        """Refuse a missing, malformed or newer schema version."""
        version = self.whole("schema")
        if version > newest:
            raise RecordError(
                f"{self.where}: {what} schema {version} is newer than this evaltape "
                f"({VERSION}) reads (up to {newest}); upgrade evaltape"
            )
        if version < 1:
            raise RecordError(f'{self.where}: field "schema": must be at least 1, got {version}')


def _type(value: object) -> str:
    if value is None:
        return "null"
    names: dict[type, str] = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return names.get(type(value), "value")


def _req(value: E | None) -> E:
    assert value is not None
    return value


def _usage_from(data: object, where: str) -> Usage:
    f = Fields(data, where)
    return Usage(
        input_tokens=f.whole("input"),
        output_tokens=f.whole("output"),
        cache_read_tokens=f.whole("cache_read"),
        cache_write_tokens=f.whole("cache_write"),
        reasoning_tokens=f.whole("reasoning"),
        reported=f.flag("reported"),
    )


def attempt_from_json(data: object, where: str) -> AttemptResult:
    """Read one attempt; ``where`` prefixes every error (``runs/X.json: attempts[3]``)."""
    f = Fields(data, where)
    return AttemptResult(
        case_id=f.text("case"),
        suite=f.text("suite"),
        model=f.text("model"),
        attempt=f.whole("attempt"),
        verdict=_req(f.member("verdict", Verdict)),
        reason=f.text("reason"),
        usage=_usage_from(f.data.get("usage"), f"{where}: usage"),
        duration=_req_float(f.number("duration")),
        tape=f.text("tape"),
        session_id=f.text("session"),
        mode=_req(f.member("mode", RunKind)),
        tainted=f.flag("tainted"),
        quarantined=f.flag("quarantined"),
        known_gap=f.flag("known_gap"),
        rescored=f.member("rescored", Verdict, optional=True),
        replayed=f.member("replayed", Verdict, optional=True),
        cost=f.number("cost", optional=True) if "cost" in f.data else None,
        judge_usage=(
            _usage_from(f.data["judge_usage"], f"{where}: judge_usage")
            if "judge_usage" in f.data
            else Usage()
        ),
        judge_cost=f.number("judge_cost", optional=True) if "judge_cost" in f.data else None,
        judge_score=f.number("judge_score", optional=True) if "judge_score" in f.data else None,
        fingerprint=f.text("fingerprint") if "fingerprint" in f.data else "",
        outputs_digest=f.text("outputs_digest") if "outputs_digest" in f.data else "",
        effects_digest=f.text("effects_digest") if "effects_digest" in f.data else "",
    )


def _req_float(value: float | None) -> float:
    assert value is not None
    return value


def record_from_json(data: object, where: str) -> RunRecord:
    """Read a run record's plain-dict form; ``RecordError`` names ``where`` and the field."""
    f = Fields(data, where)
    f.schema(SCHEMA, "run record")
    return RunRecord(
        run_id=f.text("run_id"),
        kind=_req(f.member("kind", RunKind)),
        state=_req(f.member("state", RunState)),
        started_at=_req_float(f.number("started_at")),
        finished_at=f.number("finished_at", optional=True),
        updated_at=f.number("updated_at", optional=True),
        commit=f.text("commit"),
        version=f.text("version"),
        models=f.texts("models"),
        suites=f.texts("suites"),
        trials=f.whole("trials"),
        total=f.whole("total"),
        attempts=tuple(
            attempt_from_json(item, f"{where}: attempts[{i}]")
            for i, item in enumerate(f.array("attempts"))
        ),
        notes=f.texts("notes"),
        purpose=f.text("purpose") if "purpose" in f.data else "",
        gate=f.text("gate") if "gate" in f.data else "",
        gate_blocked=f.flag("gate_blocked") if "gate_blocked" in f.data else False,
        baseline_accepted=(f.flag("baseline_accepted") if "baseline_accepted" in f.data else False),
        baseline=f.text("baseline") if "baseline" in f.data else "",
        exported=f.texts("exported") if "exported" in f.data else (),
    )


# Files ---------------------------------------------------------------------


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


def write_record(results: Path, record: RunRecord) -> Path:
    """Write ``record`` atomically to ``<results>/runs/<run id>.json``; returns the path."""
    path = record_path(results, record.run_id)
    write_atomic(path, json.dumps(record_to_json(record), indent=1) + "\n")
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
