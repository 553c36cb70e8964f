"""``evaltape rerecord`` as a user runs it: a real chat server on 127.0.0.1, real subprocesses.

A project is recorded live into its cassettes; an edit of the agent's system
prompt (``CHAT_AGENT_VARIANT=changed_request``) makes every recording stale.
``rerecord`` sends exactly the stale attempts again (counted in the server's
request log), replaces their sessions in place, and the next replay passes.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from agents.forced_chat_server import ForcedChatServer
from test_live_replay_cli import case, evaltape, make_project
from test_replay_harness_changes import AGENT, CASES, REPO, SUITE, TOOL_BUGS, plant, suite_line
from test_replay_harness_changes import evaltape as forced

from evaltape.recorder import Mode, TapeReader
from evaltape.scoring import read_record, resolve_run

pytestmark = pytest.mark.slow

STALE = {"CHAT_AGENT_VARIANT": "changed_request"}
PRICES = {"fake-1": {"input": 1000.0, "output": 2000.0}}
"""10 prompt + 5 completion tokens cost $0.02; 100 + 50 cost $0.20."""


def recorded(tmp_path: Path, server: ChatServer, *ids: str) -> Path:
    project = make_project(
        tmp_path, [case(i, f"say {i}") for i in ids], agent="chat_agent:run",
        base_url=server.url, concurrency=1,
    )  # fmt: skip
    (project / "prices.json").write_text(json.dumps(PRICES))
    live = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", "--trials", "2")
    assert live.returncode == 0, live.stdout + live.stderr
    return project


def shape(project: Path) -> dict[str, Counter[tuple[str, int]]]:
    """Per cassette: how many live sessions of each (model, attempt)."""
    return {
        tape.name: Counter(
            (s.header.model, s.header.attempt)
            for s in TapeReader(tape).sessions()
            if s.header.mode is Mode.LIVE
        )
        for tape in sorted((project / "cassettes").rglob("*.tape"))
    }


def asked(server: ChatServer, since: int) -> list[tuple[str, str]]:
    """(user prompt, system prompt) of each request since ``since``."""
    return [
        (r["messages"][-1]["content"], r["messages"][0]["content"]) for r in server.requests[since:]
    ]


def test_a_prompt_edit_is_re_recorded_in_place_and_the_next_replay_passes(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta", "gamma")
    before = shape(project)
    assert before == {
        f"{i}.tape": Counter({("fake-1", 0): 1, ("fake-1", 1): 1})
        for i in ("alpha", "beta", "gamma")
    }
    stale = evaltape(project, "replay", env=STALE)
    assert stale.returncode == 3, stale.stdout + stale.stderr

    sent = len(server.requests)
    done = evaltape(project, "rerecord", "--cases", "alpha,beta", env=STALE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  basic/alpha  fake-1  attempts 1,2  (stale)  est. n/a" in done.stderr
    assert "estimated cost: n/a (no price for fake-1)" in done.stderr
    new = asked(server, sent)
    assert sorted(p for p, _ in new) == ["say alpha", "say alpha", "say beta", "say beta"]
    assert all(system.endswith("Also be polite.") for _, system in new)
    assert "re-recorded 4 of 4 attempt(s) into 2 cassette(s)" in done.stdout
    assert shape(project) == before  # replaced in place: same tapes, same sessions per key
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert all(a.tape.startswith(f"tapes/{record.run_id}/") for a in record.attempts)

    still = evaltape(project, "replay", "--cases", "gamma", env=STALE)
    assert still.returncode == 3, still.stdout
    fixed = evaltape(project, "replay", "--cases", "alpha", "--cases", "beta", env=STALE)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr

    sent = len(server.requests)
    rest = evaltape(project, "rerecord", "--pricing", "prices.json", env=STALE)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert "  basic/gamma  fake-1  attempts 1,2  (stale)  est. $0.0400" in rest.stderr
    assert "estimated cost: $0.0400" in rest.stderr
    assert sorted(p for p, _ in asked(server, sent)) == ["say gamma", "say gamma"]
    assert shape(project) == before
    assert evaltape(project, "replay", env=STALE).returncode == 0

    nothing = evaltape(project, "rerecord", env=STALE)
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    assert "nothing stale" in nothing.stdout and len(nothing.stdout.splitlines()) == 1


def test_a_budget_below_the_estimate_refuses_before_any_request(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta", "gamma")
    data = {p: p.read_bytes() for p in (project / "cassettes").rglob("*.tape")}
    replay = evaltape(project, "replay", env=STALE)
    run_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id
    assert replay.returncode == 3
    sent = len(server.requests)
    args = ("rerecord", "--from", run_id, "--pricing", "prices.json", "--budget", "0.1")
    refused = evaltape(project, *args, env=STALE)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[-1] == (
        "evaltape: error: the estimated cost $0.1200 exceeds --budget 0.1; nothing was sent"
    )
    unpriced = evaltape(project, "rerecord", "--from", run_id, "--budget", "5", env=STALE)
    assert unpriced.returncode == 2 and "the estimate is n/a" in unpriced.stderr
    assert len(server.requests) == sent
    assert {p: p.read_bytes() for p in data} == data


def test_a_budget_reached_mid_run_stops_new_attempts_and_keeps_the_finished_ones(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta", "gamma")
    before = shape(project)
    server.tokens = (100, 50)  # each attempt now costs $0.20 against the $0.02 recorded
    sent = len(server.requests)
    done = evaltape(project, "rerecord", "--pricing", "prices.json", "--budget", "0.3", env=STALE)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "estimated cost: $0.1200" in done.stderr
    assert len(server.requests) - sent == 2  # $0.20 < $0.30 starts a second; $0.40 stops
    assert "budget reached: 4 attempt(s) not started" in done.stderr
    assert "re-recorded 2 of 6 attempt(s) into 1 cassette(s)" in done.stdout
    assert shape(project) == before
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert len(record.attempts) == 2
    assert "budget reached: 4 attempt(s) not started" in record.notes
    again = evaltape(project, "replay", env=STALE)
    assert again.returncode == 3  # the other four are still stale
    assert "STALE: 4 recordings stale" in again.stdout


def test_gate_never_updates_cassettes_and_live_leaves_them_alone_by_default(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", "alpha-two")
    data = {p: p.read_bytes() for p in (project / "cassettes").rglob("*.tape")}
    sent = len(server.requests)
    gate = evaltape(project, "live", "-m", "fake-1", "--gate", "--update-cassettes")
    assert gate.returncode == 2
    assert gate.stderr.splitlines() == [
        "evaltape: error: --gate never changes the cassettes; drop --update-cassettes (or --gate)"
    ]
    assert len(server.requests) == sent
    plain = evaltape(project, "live", "-m", "fake-1", "--cases", "alpha", "--trials", "1")
    assert plain.returncode == 0, plain.stderr
    assert [p for p, _ in asked(server, sent)] == ["say alpha"]  # the exact id, not alpha-two
    assert {p: p.read_bytes() for p in data} == data
    run = read_record(resolve_run(project / ".evaltape" / "results"))
    (attempt,) = run.attempts
    assert attempt.tape == f"tapes/{run.run_id}/basic/alpha.tape"
    assert (project / ".evaltape" / "results" / attempt.tape).is_file()
    unknown = evaltape(project, "replay", "--cases", "alpah")
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines() == [
        'evaltape: error: no case id in the loaded suites is or starts with "alpah"; '
        "close ids: alpha, alpha-two"
    ]


@pytest.mark.parametrize("accept", [False, True])
def test_a_tool_result_change_is_refused_unless_accepted(tmp_path: Path, accept: bool) -> None:
    """An off-by-one ``read`` (a CHANGED attempt) is never re-recorded without the flag."""
    project = _forced_project(tmp_path, CASES[0])
    module, intact, broken, *_ = TOOL_BUGS["read is off by one line"]
    plan = [(name, args) for name, args in CASES[0]["plan"]]  # type: ignore[attr-defined]
    with ForcedChatServer(plan, str(CASES[0]["answer"])) as server:
        live = forced(project, "live", "--update-cassettes", "-m", "fake-model",
                      "--base-url", server.url, "--source", "simulated")  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
        before = shape(project)
        plant(project, module, intact, broken)
        sent = len(server.requests)
        flags = ("--accept-harness-changes",) if accept else ()
        done = forced(
            project, "rerecord", "--base-url", server.url, "--source", "simulated", *flags
        )
        if not accept:
            assert done.returncode == 2, done.stdout + done.stderr
            line = done.stderr.splitlines()[-1]
            assert line.startswith("evaltape: error: 1 attempt(s) CHANGED")
            assert "would record the changed behaviour as correct" in line
            assert len(server.requests) == sent
            return
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.requests) > sent
    assert shape(project) == before
    assert forced(project, "replay").returncode == 0


def _forced_project(root: Path, one: dict[str, object]) -> Path:
    """One case of the harness-change suite with a copy of the reference agent."""
    shutil.copytree(
        REPO / "evals" / "agent", root / AGENT, ignore=shutil.ignore_patterns("__pycache__")
    )
    for module in (root / AGENT).glob("*.py"):
        module.write_text(module.read_text().replace("evals.agent.", f"{AGENT}."))
    (root / "suites").mkdir()
    (root / "suites" / f"{SUITE}.jsonl").write_text(suite_line(one) + "\n")
    (root / "evaltape.toml").write_text(
        f'suites = "suites"\ncassettes = "cassettes"\nresults = "results"\nagent = "{AGENT}:run"\n'
    )
    return root
