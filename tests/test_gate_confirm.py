"""The gate confirms a broken green case before blocking, compares like with like, and
``evaltape compare`` prints the same decision: real subprocesses against a 127.0.0.1 chat
server, real run records and history."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import case, evaltape, make_project

from evaltape.scoring import read_record, resolve_run

pytestmark = pytest.mark.slow

CASES = [case(f"c{n}", f"say {n}") for n in range(6)]
BROKEN = {"CHAT_AGENT_VARIANT": "fail_after"}


def latest(project: Path):  # type: ignore[no-untyped-def]
    return read_record(resolve_run(project / ".evaltape" / "results"))


def test_a_green_case_that_fails_its_trials_is_re_run_before_it_blocks(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)
    zero = evaltape(project, "live", "-m", "fake-1", "--gate")
    assert zero.returncode == 0, zero.stderr
    first = latest(project)

    broken = evaltape(
        project, "live", "-m", "fake-1", "--gate", "--confirm-trials", "6", env=BROKEN
    )
    assert broken.returncode == 1, broken.stdout + broken.stderr
    rounds = [ln for ln in broken.stderr.splitlines() if "confirming 6 case(s)" in ln]
    assert len(rounds) == 2 and "18 more trial(s) in this round, up to 6 per case" in rounds[0]
    assert (
        "closed: previously green case basic/c0 fails now: 3/3 in the baseline, 0/3 now "
        "and 0/6 on confirmation re-runs"
    ) in broken.stdout
    blocked = latest(project)
    again = [a for a in blocked.attempts if a.confirmation]
    assert len(again) == 36 and {a.attempt for a in again} == set(range(3, 9))
    assert blocked.total == 54 and blocked.confirm_trials == 6 and blocked.gate_blocked

    # a healthy run with one unlucky case: 0/3 planned, then its re-runs pass, so it opens
    # (the default allows 12 re-runs; the first round passes, so there is no second)
    unlucky = evaltape(project, "live", "-m", "fake-1", "--gate", env={"CHAT_AGENT_UNLUCKY": "c2"})
    assert unlucky.returncode == 0, unlucky.stdout + unlucky.stderr
    assert unlucky.stderr.count("confirming 1 case(s)") == 1
    assert "previously green case basic/c2 fails now: 3/3 in the baseline, 0/3 now, but 3/3 " in (
        unlucky.stdout
    )
    assert "not confirmed, left to the paired test" in unlucky.stdout
    assert "gate [fake-1]: OPEN" in unlucky.stdout
    assert f"run {first.run_id}" in unlucky.stdout  # still against run zero: blocked is skipped
    opened = latest(project)
    assert opened.gate == "open" and not opened.gate_blocked
    assert sorted(a.attempt for a in opened.attempts if a.confirmation) == [3, 4, 5]

    # compare prints the gate's decision on the same pair, beside the paired test
    report = evaltape(project, "compare", first.run_id, blocked.run_id)
    assert report.returncode == 0, report.stderr
    assert "Gate (as recorded: made again from the run's gate inputs): CLOSED" in report.stdout
    assert "previously green case basic/c0 fails now" in report.stdout
    assert "and 0/6 on confirmation re-runs" in report.stdout
    calm = evaltape(project, "compare", first.run_id, opened.run_id)
    assert "Gate (as recorded: made again from the run's gate inputs): OPEN" in calm.stdout
    assert "3 trials passed" not in calm.stdout or "confirmation" in calm.stdout


def test_a_gate_never_pairs_runs_with_different_trials_per_case(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES[:3], agent="chat_agent:run", base_url=server.url)
    one = evaltape(project, "live", "-m", "fake-1")  # 1 trial per case (the config default)
    assert one.returncode == 0, one.stderr
    single = latest(project)
    assert single.trials == 1

    gated = evaltape(project, "live", "-m", "fake-1", "--gate", env=BROKEN)
    assert gated.returncode == 0, gated.stdout + gated.stderr  # nothing like it to compare with
    # not "run zero": a run exists, it just cannot be a gate's baseline, and the line says why
    assert "gate [fake-1]: NOT GATED (no baseline)" in gated.stdout
    assert "run zero" not in gated.stdout
    assert (
        f"note: no baseline: no earlier run of fake-1 ran 3 trial(s) per case (run "
        f"{single.run_id} ran 1); this run can be the first baseline"
    ) in gated.stdout
    three = latest(project)
    assert three.gate == "no baseline" and not three.gate_blocked

    # a gate with 2 trials per case is never a gate, nor a baseline for one
    two = evaltape(project, "live", "-m", "fake-1", "--gate", "--trials", "2", env=BROKEN)
    assert two.returncode == 0, two.stdout + two.stderr
    assert (
        "no baseline: this run ran 2 trial(s) per case and a gate needs at least 3 a side: it "
        "is not gated and is never a gate's baseline"
    ) in two.stdout
    after = evaltape(project, "live", "-m", "fake-1", "--gate", env=BROKEN)
    assert after.returncode == 0, after.stdout  # as broken as the 3-trial run it is paired with
    assert f"run {three.run_id}" in after.stdout and "gate [fake-1]: OPEN" in after.stdout

    saved = evaltape(project, "live", "-m", "fake-1", "--save-baseline", "--baseline", "one")
    assert saved.returncode == 0, saved.stderr
    refused = evaltape(project, "live", "-m", "fake-1", "--gate", "--baseline", "one")
    assert refused.returncode == 2
    assert 'baseline "one" ran 1 trial(s) per case and this gate runs 3' in refused.stderr
    assert "Traceback" not in refused.stderr
    requests = len(server.requests)
    assert requests == 3 + 9 + 6 + 9 + 3  # the refusal ran nothing

    # the gated run's own decision, made again from its record, whatever BASE is
    report = evaltape(project, "compare", single.run_id, three.run_id)
    assert report.returncode == 0, report.stderr
    assert "Gate (as recorded: made again from the run's gate inputs): NOT GATED" in report.stdout
    # an ungated pair is what the gate would decide on these attempts
    plain = evaltape(project, "compare", three.run_id, single.run_id)
    assert "Gate: not applicable: the baseline ran 3 trial(s) per case and this run 1" in (
        plain.stdout
    )
