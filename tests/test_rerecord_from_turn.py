"""``evaltape rerecord --from-turn``: a session stale at turn 3 of 6 is sent again from turn 3.

The loop agent makes six calls to the chat server on 127.0.0.1; an edit that
adds a request parameter from its third call on (``LOOP_AGENT_TEMPERATURE_FROM=3``)
makes the recording stale at turn 3.  ``rerecord --from-turn`` serves turns 1-2
from the recording and sends only turns 3-6 (counted in the server's request
log); the estimate prices those four turns; the new session says in its header
which turns were served, and replays unchanged with the edit in place.  The
same holds for the agent as a program behind the local proxy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import evaltape, make_project

from evaltape.recorder import Mode, TapeReader, fold
from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.cost import cost_of_session, load_prices

pytestmark = pytest.mark.slow

CALLS = {"LOOP_AGENT_CALLS": "6"}
EDITED = CALLS | {"LOOP_AGENT_TEMPERATURE_FROM": "3"}
PRICES = {"fake-1": {"input": 1000.0, "output": 2000.0}}
"""Each call reports 10 prompt + 5 completion tokens: $0.02 a turn, $0.12 a session."""


AGENTS = Path(__file__).parent / "agents"
KINDS = {
    "python": "loop_agent:run",
    "command": f"cmd:{sys.executable} {AGENTS / 'loop_agent.py'} {{prompt}}",
}
"""The loop agent as a Python function and as a program behind the local proxy."""


def recorded(tmp_path: Path, server: ChatServer, agent: str = KINDS["python"]) -> Path:
    case = {
        "id": "six-steps",
        "prompt": "take six steps",
        "failureCategory": "runner",
        "whyModelBacked": "exercises re-recording from a turn",
        "expectMaxTurns": 8,
    }
    project = make_project(
        tmp_path, [json.dumps(case)], agent=agent, base_url=server.url,
        concurrency=1,
    )  # fmt: skip
    (project / "prices.json").write_text(json.dumps(PRICES))
    live = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", env=CALLS)
    assert live.returncode == 0, live.stdout + live.stderr
    return project


def live_sessions(project: Path) -> list[tuple[str, int, dict[str, object]]]:
    tape = project / "cassettes" / "basic" / "six-steps.tape"
    out = []
    for recorded in TapeReader(tape).sessions():
        session = fold(recorded.events)
        if session.header.mode is Mode.LIVE:
            out.append((session.session_id, len(session.turns), dict(session.header.metadata)))
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_change_at_turn_3_of_6_sends_turns_3_to_6_only(
    tmp_path: Path, server: ChatServer, kind: str
) -> None:
    project = recorded(tmp_path, server, KINDS[kind])
    ((old_id, turns, _),) = live_sessions(project)
    assert turns == 6
    stale = evaltape(project, "replay", env=EDITED)
    assert stale.returncode == 3, stale.stdout + stale.stderr

    whole = evaltape(project, "rerecord", "--pricing", "prices.json", "--budget", "0.1", env=EDITED)
    assert whole.returncode == 2, whole.stdout + whole.stderr
    assert "estimated cost: $0.1200" in whole.stderr  # the default: the whole session

    sent = len(server.requests)
    args = ("rerecord", "--from-turn", "--pricing", "prices.json", "--budget", "0.1")
    done = evaltape(project, *args, env=EDITED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  basic/six-steps  fake-1  attempts 1  (stale)  live from turn 3  est. $0.0800" in (
        done.stderr
    )
    assert "estimated cost: $0.0800" in done.stderr
    new = server.requests[sent:]
    assert [len(r["messages"]) for r in new] == [5, 7, 9, 11]  # turns 3, 4, 5, 6
    assert all(r.get("temperature") == 0.5 for r in new)
    assert "re-recorded 1 of 1 attempt(s) into 1 cassette(s)" in done.stdout

    ((new_id, turns, metadata),) = live_sessions(project)
    assert new_id != old_id and turns == 6
    assert metadata["replayed_turns"] == 2 and metadata["replayed_from"] == old_id
    run = read_record(resolve_run(project / ".evaltape" / "results"))
    (attempt,) = run.attempts
    assert attempt.cost == pytest.approx(0.08)  # the live turns only

    sent = len(server.requests)
    again = evaltape(project, "replay", env=EDITED)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(server.requests) == sent
    tape = TapeReader(project / "cassettes" / "basic" / "six-steps.tape")
    (session,) = [fold(s.events) for s in tape.sessions() if s.session_id == new_id]
    prices = load_prices(project / "prices.json")
    assert cost_of_session(prices, "fake-1", session).cost == pytest.approx(0.08)


def test_from_turn_refuses_harness_changes_in_one_line(tmp_path: Path, server: ChatServer) -> None:
    project = recorded(tmp_path, server)
    sent = len(server.requests)
    refused = evaltape(project, "rerecord", "--from-turn", "--accept-harness-changes", env=EDITED)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines() == [
        "evaltape: error: --from-turn cannot re-record CHANGED attempts (drop "
        "--accept-harness-changes): after a tool-result or conversation change the earlier "
        "turns are not what the model would be asked today"
    ]
    assert len(server.requests) == sent
