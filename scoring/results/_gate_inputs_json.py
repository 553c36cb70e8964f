"""The JSON form of ``GateInputs``, as stored in a run record's ``gate_inputs``."""

from __future__ import annotations

from ._gate_inputs import Exemption, GateInputs
from ._json_fields import Fields


def inputs_to_json(g: GateInputs) -> dict[str, object]:
    """The plain-dict form of one model's gate inputs."""
    return {
        "model": g.model,
        "decision": g.decision,
        "baseline_runs": list(g.baseline_runs),
        "saved_baseline": g.saved_baseline,
        "history": list(g.history),
        "exemptions": [
            {"suite": e.suite, "case": e.case_id, "run": e.run_id} for e in g.exemptions
        ],
        "reruns": g.reruns,
        "alpha": g.alpha,
        "confirm": g.confirm,
        "plan_drop": g.plan_drop,
        "judge_status": g.judge_status,
        "floor_failures": list(g.floor_failures),
        "missing": g.missing,
    }


def inputs_from_json(data: object, where: str) -> GateInputs:
    """Read one model's gate inputs; ``RecordError`` names ``where`` and the field."""
    f = Fields(data, where)
    exemptions = []
    for n, item in enumerate(f.array("exemptions")):
        e = Fields(item, f"{where}: exemptions[{n}]")
        exemptions.append(
            Exemption(suite=e.text("suite"), case_id=e.text("case"), run_id=e.text("run"))
        )
    alpha, drop = f.number("alpha"), f.number("plan_drop")
    assert alpha is not None and drop is not None
    return GateInputs(
        model=f.text("model"),
        decision=f.text("decision"),
        baseline_runs=f.texts("baseline_runs"),
        saved_baseline=f.text("saved_baseline"),
        history=f.texts("history"),
        exemptions=tuple(exemptions),
        reruns=f.whole("reruns"),
        alpha=alpha,
        confirm=f.whole("confirm"),
        plan_drop=drop,
        judge_status=f.text("judge_status"),
        floor_failures=f.texts("floor_failures"),
        missing=f.text("missing"),
    )
