"""A stop stops spending: after SIGTERM, ``evaltape live`` sends no new model call, and every
call the provider received is on a tape.

A real subprocess against the 127.0.0.1 chat server; agents that call the model
in a loop.  The server answers the first calls at once and holds the next one of
each attempt, so the signal always lands with a call in flight; the test
releases the held calls only once the run says it has stopped, and then counts:
every request the server received is an answered exchange on the run's tapes,
and each agent's next call was refused (on the tape, and to the agent) without
reaching the server.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import AGENTS, agent_env, case, end_status, make_project, sessions

from evaltape.recorder import Exchange, Status, fold
from evaltape.scoring import RunState, read_record, resolve_run

pytestmark = pytest.mark.slow

REFUSAL = "evaltape: the run was stopped (SIGTERM); no new model calls are sent"
ANSWERED_AT_ONCE = 5
"""Calls the server answers before it holds the next one of each attempt."""

AGENT_SPECS = {
    "python": "loop_agent:run",
    "command": f"cmd:{sys.executable} {AGENTS / 'loop_agent.py'} {{prompt}}",
}


@pytest.mark.parametrize("kind", sorted(AGENT_SPECS))
def test_after_sigterm_no_new_call_reaches_the_provider_and_every_call_is_on_a_tape(
    tmp_path: Path, server: ChatServer, kind: str
) -> None:
    server.hold_after = ANSWERED_AT_ONCE
    server.hang = 120.0  # held until released: the test, not the clock, decides
    project = make_project(
        tmp_path,
        [case("loop-a", "[hold] keep going a"), case("loop-b", "[hold] keep going b")],
        agent=AGENT_SPECS[kind],
        base_url=server.url,
        concurrency=2,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "evaltape.scoring.cli", "live", "-m", "fake-1"],
        cwd=project,
        env=agent_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    assert server.wait_holding(2)  # both attempts have a call in flight
    process.send_signal(signal.SIGTERM)
    for line in process.stderr:
        if line.startswith("evaltape: stopping (SIGTERM): no new model calls are sent"):
            break
    else:
        pytest.fail("the run never said it stopped")
    received = len(server.requests)
    assert received == ANSWERED_AT_ONCE + 2
    server.release()  # the calls in flight are answered now
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert len(server.requests) == received  # nothing was sent after the stop

    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.state is RunState.CANCELLED and len(record.attempts) == 2
    answered = refused = 0
    for tape in (project / ".evaltape" / "results" / "tapes").rglob("*.tape"):
        for recorded in sessions(tape):
            assert end_status(recorded) is Status.INTERRUPTED
            exchanges = [e for e in recorded.events if isinstance(e, Exchange)]
            mine = [e for e in exchanges if e.response is not None]
            answered += len(mine)
            assert all(e.response.status == 200 for e in mine if e.response is not None)
            (last,) = [e for e in exchanges if e.response is None]  # the one call refused
            assert exchanges[-1] is last and last.error is not None
            assert (last.error.type, last.error.message) == ("RunStopped", REFUSAL)
            refused += 1
            if kind == "command":  # the program was answered a 503 saying so
                view = fold(recorded.events)
                (note,) = [f for f in view.workspace if f.path == "refused.json"]
                body = json.loads(note.data)
                assert body["status"] == 503
                assert body["body"]["error"]["message"] == REFUSAL
    assert answered == received  # every request the provider got is on a tape
    assert refused == 2
