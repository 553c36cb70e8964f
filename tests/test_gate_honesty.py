"""The gate stays honest across runs (#39): exemptions cannot be bought, ``compare`` makes
a gated run's decision again from its record long after, and the live summary counts
what the gate counts.  Real subprocesses against the 127.0.0.1 chat server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import case, evaltape, make_project

from evaltape.scoring import RunRecord, read_record, resolve_run

pytestmark = pytest.mark.slow

CASES = [case(f"c{n}", f"say {n}") for n in range(6)]
BREAK_C2 = {"CHAT_AGENT_BROKEN": "c2"}
UNLUCKY_C2 = {"CHAT_AGENT_UNLUCKY": "c2"}
CLOSED_C2 = re.compile(r"closed: previously (green|passing) case basic/c2 fails now")


def latest(project: Path) -> RunRecord:
    return read_record(resolve_run(project / ".evaltape" / "results"))


def gate(project: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = evaltape(project, "live", "-m", "fake-1", "--gate", *flags, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def test_a_broken_case_cannot_buy_an_exemption(tmp_path: Path, server: ChatServer) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)
    assert gate(project)[0] == 0 and gate(project)[0] == 0  # run zero, then one more

    # an ungated run with the same trials, c2 failing all of them, earns nothing
    ungated = evaltape(project, "live", "-m", "fake-1", "--trials", "3", env=BREAK_C2)
    assert ungated.returncode == 0, ungated.stderr
    code, out = gate(project, env=BREAK_C2)
    assert code == 1, out
    assert CLOSED_C2.search(out) and "0/12 on confirmation re-runs" in out
    assert latest(project).gate_inputs[0].exemptions == ()

    # neither does a run waved through with --accept-baseline
    code, out = gate(project, "--accept-baseline", env=BREAK_C2)
    assert code == 0 and "accepted with --accept-baseline" in out, out
    code, out = gate(project, env=BREAK_C2)
    assert code == 1 and CLOSED_C2.search(out), out  # still held: c2 was green in a pooled run

    # alternating healthy and broken runs: every broken one is blocked
    for _ in range(3):
        assert gate(project)[0] == 0
        code, out = gate(project, env=BREAK_C2)
        assert code == 1 and CLOSED_C2.search(out), out


def test_an_exemption_is_used_once_and_does_not_renew(tmp_path: Path, server: ChatServer) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)
    assert gate(project)[0] == 0
    # a gated, healthy run in which c2 failed its planned trials (its re-runs passed)
    code, out = gate(project, env=UNLUCKY_C2)
    assert code == 0 and "not confirmed, left to the paired test" in out, out
    evidence = latest(project).run_id
    # the next broken run uses that evidence once ...
    code, out = gate(project, env=BREAK_C2)
    assert code == 0 and "exempt once" in out, out
    used = latest(project).gate_inputs[0].exemptions
    assert [(e.case_id, e.run_id) for e in used] == [("c2", evidence)]
    # ... and its own failure renews nothing: the one after is blocked
    code, out = gate(project, env=BREAK_C2)
    assert code == 1 and CLOSED_C2.search(out), out


def _closed(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if line.strip().startswith("closed:"))


def test_compare_makes_the_recorded_decision_again_after_20_more_runs(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)
    plan = [None, None, UNLUCKY_C2, BREAK_C2, None, BREAK_C2]
    decided: list[tuple[RunRecord, list[str]]] = []
    for env in plan:
        _, out = gate(project, env=env)
        decided.append((latest(project), _closed(out)))
    assert {r.gate for r, _ in decided} >= {"run zero", "open", "closed"}
    for n in range(20):  # the history grows: other pools, other windows, other exemptions
        gate(project, env=(UNLUCKY_C2, None, BREAK_C2, None)[n % 4])
    first = decided[0][0].run_id
    words = {"open": "OPEN", "closed": "CLOSED", "run zero": "OPEN (run zero)"}
    for record, closed in decided:
        report = evaltape(project, "compare", first, record.run_id)
        assert report.returncode == 0, report.stderr
        heading = "Gate (as recorded: made again from the run's gate inputs): "
        assert f"{heading}{words[record.gate]}\n" in report.stdout, report.stdout
        gate_part = report.stdout[report.stdout.index(heading) :]
        assert _closed(gate_part) == closed
        assert "differs" not in gate_part

    # a record written before the inputs were kept still reads; compare says what it did
    old = decided[3][0]
    path = project / ".evaltape" / "results" / "runs" / f"{old.run_id}.json"
    data = json.loads(path.read_text())
    del data["gate_inputs"]
    path.write_text(json.dumps(data))
    report = evaltape(project, "compare", first, old.run_id)
    assert report.returncode == 0, report.stderr
    assert "Gate (as evaltape live --gate decides on these attempts):" in report.stdout
    assert f"the run's own gate decided {old.gate!r}; its record keeps no gate inputs" in (
        report.stdout
    )


def test_the_live_summary_keeps_confirmation_re_runs_apart(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)
    assert gate(project)[0] == 0
    code, out = gate(project, env=BREAK_C2)
    assert code == 1, out
    record = latest(project)
    assert sum(a.confirmation for a in record.attempts) == 12
    # the tally and the rate count the 18 planned trials, as the gate does; re-runs apart
    assert "fake-1: 15/18 passed" in out
    assert "  confirmation re-runs: 0/12 passed" in out
    assert "FAIL c2 + 0/12 confirmation re-runs (0/3 passed" in out
    rate = re.search(r"pass rate: ([\d.]+)% per-case mean", out)
    gate_rate = re.search(r"this run: 15/18 trials passed, per-case mean ([\d.]+)%", out)
    assert rate and gate_rate and rate.group(1) == gate_rate.group(1) == "83.3", out
