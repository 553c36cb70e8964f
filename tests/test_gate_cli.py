"""``evaltape live --gate`` and baselines as a user runs them: real subprocesses, a real chat
server on 127.0.0.1, real run records, history and baseline files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import case, evaltape, make_project

from evaltape.scoring import read_record, resolve_run

pytestmark = pytest.mark.slow

CASES = [case(f"c{n}", f"say {n}") for n in range(6)]
BROKEN = {"CHAT_AGENT_VARIANT": "fail_after"}


def latest(project: Path) -> object:
    return read_record(resolve_run(project / ".evaltape" / "results"))


def test_the_gate_closes_on_a_regression_skips_blocked_runs_and_accepts_on_request(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES, agent="chat_agent:run", base_url=server.url)

    zero = evaltape(project, "live", "-m", "fake-1", "--gate")
    assert zero.returncode == 0, zero.stderr
    assert "gate [fake-1]: OPEN (run zero)" in zero.stdout
    first = read_record(resolve_run(project / ".evaltape" / "results"))
    assert first.trials == 3 and len(first.attempts) == 18  # --gate implies 3 trials
    assert first.gate == "run zero" and not first.gate_blocked and first.purpose == "gate"

    broken = evaltape(project, "live", "-m", "fake-1", "--gate", env=BROKEN)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "gate [fake-1]: CLOSED" in broken.stdout
    assert "closed: significant regression" in broken.stdout
    assert "closed: previously green case basic/c0 fails now: 3/3 in the baseline, 0/3 now" in (
        broken.stdout
    )
    assert f"run {first.run_id}" in broken.stdout  # the report names its baseline
    blocked = read_record(resolve_run(project / ".evaltape" / "results"))
    assert blocked.gate_blocked and blocked.gate == "closed" and first.run_id in blocked.baseline
    listed = evaltape(project, "history").stdout.splitlines()
    assert listed[-1].endswith("gate closed (blocked)") and listed[-2].endswith("gate run zero")
    shown = evaltape(project, "status", "--json")
    fields = json.loads(shown.stdout)
    assert (fields["gate"], fields["gate_blocked"], fields["purpose"]) == ("closed", True, "gate")
    assert "gate      closed (blocked: never a baseline) against fake-1: run " in (
        evaltape(project, "status").stdout
    )

    healthy = evaltape(project, "live", "-m", "fake-1", "--gate")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "gate [fake-1]: OPEN" in healthy.stdout
    # the blocked run never became the baseline: this one is compared with run zero
    assert f"run {first.run_id}" in healthy.stdout and blocked.run_id not in healthy.stdout

    waved = evaltape(project, "live", "-m", "fake-1", "--gate", "--accept-baseline", env=BROKEN)
    assert waved.returncode == 0, waved.stdout + waved.stderr
    assert "closed: significant regression" in waved.stdout  # every reason is printed
    assert "CLOSED, accepted with --accept-baseline" in waved.stdout
    accepted = read_record(resolve_run(project / ".evaltape" / "results"))
    assert accepted.baseline_accepted and not accepted.gate_blocked

    after = evaltape(project, "live", "-m", "fake-1", "--gate")
    assert after.returncode == 0
    assert f"run {accepted.run_id}" in after.stdout  # an accepted run is a baseline

    other = evaltape(project, "live", "-m", "fake-2", "--gate", env=BROKEN)
    assert other.returncode == 0  # another model's history is not its baseline
    assert "gate [fake-2]: OPEN (run zero)" in other.stdout


def test_saved_baselines_are_plain_files_with_a_dated_history(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES[:3], agent="chat_agent:run", base_url=server.url)
    for _ in range(2):
        saved = evaltape(
            project,
            "live",
            "-m",
            "fake-1",
            "--trials",
            "3",
            "--save-baseline",
            "--baseline",
            "rel-1",
        )
        assert saved.returncode == 0, saved.stderr
        assert "baseline rel-1: saved evals/baselines/rel-1.json" in saved.stderr
    latest_file = project / "evals" / "baselines" / "rel-1.json"
    data = json.loads(latest_file.read_text())
    assert data["model"] == "fake-1" and len(data["attempts"]) == 9
    dated = sorted((project / "evals" / "baselines" / "history" / "rel-1").glob("*.json"))
    assert 1 <= len(dated) <= 2  # two saves in the same second share a stamp
    assert json.loads(dated[-1].read_text()) == data

    listed = evaltape(project, "live", "--list-baselines")
    assert listed.returncode == 0 and listed.stdout.startswith("rel-1: fake-1, 9/9 passed")
    history = evaltape(project, "live", "--baseline-history", "rel-1")
    assert history.returncode == 0 and "evals/baselines/history/rel-1/" in history.stdout
    assert server.requests and len(server.requests) == 18  # listing ran nothing

    gated = evaltape(project, "live", "-m", "fake-1", "--gate", "--baseline", "rel-1", env=BROKEN)
    assert gated.returncode == 1, gated.stdout
    assert 'baseline "rel-1"' in gated.stdout
    assert "closed: previously green case basic/c2 fails now" in gated.stdout

    refused = evaltape(project, "live", "-m", "fake-2", "--gate", "--baseline", "rel-1")
    assert refused.returncode == 2
    assert "ran with model fake-1" in refused.stderr and "refused" in refused.stderr
    assert "Traceback" not in refused.stderr
    unknown = evaltape(project, "live", "-m", "fake-1", "--baseline", "nope")
    assert unknown.returncode == 2 and 'no baseline "nope"' in unknown.stderr
    assert "(saved: rel-1)" in unknown.stderr

    blocked = evaltape(project, "live", "-m", "fake-1", "--gate", "--save-baseline", env=BROKEN)
    assert blocked.returncode == 1
    assert "not saved as a baseline" in blocked.stderr


def test_gate_with_one_trial_warns_and_scoreboard_credits_only_all_three(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, CASES[:2], agent="chat_agent:run", base_url=server.url)
    one = evaltape(project, "live", "-m", "fake-1", "--gate", "--trials", "1")
    assert one.returncode == 0
    assert "--gate with --trials 1: honoured" in one.stderr
    assert read_record(resolve_run(project / ".evaltape" / "results")).trials == 1

    board = evaltape(project, "live", "-m", "fake-1", "--scoreboard")
    assert board.returncode == 0, board.stderr
    assert "fake-1: 2/2 cases credited" in board.stdout
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.trials == 3 and record.purpose == "scoreboard"
    wrong = evaltape(project, "live", "-m", "fake-1", "--scoreboard", "--trials", "2")
    assert wrong.returncode == 2 and "exactly 3 trials" in wrong.stderr
