"""The JSON form of run records, written and read with a schema version."""

from __future__ import annotations

import enum
from typing import TypeVar

from evaltape.recorder import Usage

from ._gate_inputs_json import inputs_from_json, inputs_to_json
from ._json_fields import Fields, type_name
from ._records import (
    AttemptResult,
    RecordError,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
)

__all__ = ["Fields", "attempt_from_json", "attempt_to_json", "record_from_json", "record_to_json"]

SCHEMA = 1
"""Version of the run-record JSON this evaltape writes and the newest it reads."""

E = TypeVar("E", bound=enum.Enum)


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
        "change": a.change,
        "change_detail": a.change_detail,
        **({"change_diff": list(a.change_diff)} if a.change_diff else {}),
        "cost": a.cost,
        "judge_usage": _usage_json(a.judge_usage),
        "judge_cost": a.judge_cost,
        "judge_score": a.judge_score,
        "fingerprint": a.fingerprint,
        "outputs_digest": a.outputs_digest,
        "effects_digest": a.effects_digest,
        **({"confirmation": True} if a.confirmation else {}),
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
        "export_partial": {key: list(names) for key, names in r.export_partial},
        **({"confirm_trials": r.confirm_trials} if r.confirm_trials else {}),
        **({"gate_inputs": [inputs_to_json(g) for g in r.gate_inputs]} if r.gate_inputs else {}),
        **({"pid": r.pid, "host": r.host} if r.pid is not None else {}),
        **({"heartbeat_at": r.heartbeat_at} if r.heartbeat_at is not None else {}),
        **({"workspaces": r.workspaces} if r.workspaces else {}),
    }


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
        change=f.text("change") if "change" in f.data else "",
        change_detail=f.text("change_detail") if "change_detail" in f.data else "",
        change_diff=f.texts("change_diff") if "change_diff" in f.data else (),
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
        confirmation=f.flag("confirmation") if "confirmation" in f.data else False,
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
        export_partial=_partial(f, where) if "export_partial" in f.data else (),
        confirm_trials=f.whole("confirm_trials") if "confirm_trials" in f.data else 0,
        gate_inputs=tuple(
            inputs_from_json(item, f"{where}: gate_inputs[{n}]")
            for n, item in enumerate(f.array("gate_inputs") if "gate_inputs" in f.data else ())
        ),
        pid=f.whole("pid") if "pid" in f.data else None,
        host=f.text("host") if "host" in f.data else "",
        heartbeat_at=f.number("heartbeat_at") if "heartbeat_at" in f.data else None,
        workspaces=f.text("workspaces") if "workspaces" in f.data else "",
    )


def _partial(f: Fields, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    data = f.data["export_partial"]
    if not isinstance(data, dict):
        got = type_name(data)
        raise RecordError(f'{where}: field "export_partial": expected an object, got {got}')
    inner = Fields(data, f'{where}: field "export_partial"')
    return tuple((key, inner.texts(key)) for key in data)
