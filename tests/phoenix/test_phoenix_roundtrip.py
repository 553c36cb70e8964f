"""A real ``evaltape live`` run exported to a real Arize Phoenix, read back through its
REST API: every span, parent links, attributes, statuses, token counts and sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeAPI
from test_export_langfuse import AGENT_KEY, make_project, script_run

from evaltape.recorder import VERSION, Session, TapeReader, decode_call, fold
from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.judge._role import judge_exchanges

pytestmark = pytest.mark.phoenix

REPO = Path(__file__).parent.parent.parent
CASES = ("find-word", "explodes", "flaky")


def evaltape(project: Path, phoenix_url: str, name: str, *args: str) -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "LANGFUSE_", "OTEL_", "EVALTAPE_"))
    }
    env |= {
        "PYTHONPATH": str(REPO),
        "OPENAI_API_KEY": AGENT_KEY,
        "EVALTAPE_JUDGE_API_KEY": "sk-judge-0123456789abcdefghijklmnop",
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix_url,
        "OTEL_SERVICE_NAME": "evaltape-roundtrip",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={name},team=evals",
    }
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: export" not in done.stderr, done.stderr
    return done.stdout


def recorded_in(tapes: Path, case: str) -> Session:
    """The run's own session of ``case`` (a provider error never reaches the cassettes)."""
    (session,) = TapeReader(tapes / f"{case}.tape").sessions()
    return fold(session.events)


def spans_of(phoenix: Any, project: str, expected: int) -> list[dict[str, Any]]:
    """Phoenix's spans of ``project`` once ``expected`` have been ingested (it inserts in
    the background), failing with what arrived if they never do."""
    spans: list[dict[str, Any]] = []
    for _ in range(240):
        try:
            spans = phoenix.all(f"/v1/projects/{project}/spans")
        except Exception:  # the project appears with its first span
            spans = []
        if len(spans) >= expected:
            return spans
        time.sleep(0.25)
    pytest.fail(f"{len(spans)} of {expected} spans arrived: {[s['name'] for s in spans]}")


def test_a_live_run_round_trips_through_phoenix(tmp_path: Path, api: FakeAPI, phoenix: Any) -> None:
    name = f"evaltape-{uuid.uuid4().hex[:8]}"
    project = make_project(tmp_path, api)
    script_run(api)
    evaltape(
        project,
        phoenix.url,
        name,
        "live",
        "-m",
        "agent-1",
        "--source",
        "simulated",
        "--retries",
        "0",
    )
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert sorted(record.exported) == sorted(f"basic/{c}/agent-1/0" for c in CASES)
    tapes = project / ".evaltape" / "results" / "tapes" / record.run_id / "basic"
    sessions = {c: recorded_in(tapes, c) for c in CASES}
    expected = sum(
        1 + len(s.turns) + len(s.tool_calls) + (1 if judge_exchanges(s) else 0)
        for s in sessions.values()
    )
    spans = spans_of(phoenix, name, expected)
    assert len(spans) == expected

    by_id = {s["context"]["span_id"]: s for s in spans}
    roots = {s["attributes"]["langfuse.trace.name"]: s for s in spans if not s["parent_id"]}
    assert set(roots) == {f"basic/{c}" for c in CASES} | {"grade basic/find-word"}
    for span in spans:
        a = span["attributes"]
        # run-level attributes on every span, as sent
        assert a["langfuse.environment"] == "default"
        assert a["langfuse.release"] == VERSION
        assert a["evaltape.run.id"] == record.run_id
        assert a["session.id"] in (record.run_id, record.run_id + "/grading")
        assert span["status_code"] in ("OK", "UNSET", "ERROR")
        if span["parent_id"]:  # every child hangs from its own trace's root
            parent = by_id[span["parent_id"]]
            assert parent["context"]["trace_id"] == span["context"]["trace_id"]
            assert not parent["parent_id"]

    kinds = {s["name"].split()[0]: s["span_kind"] for s in spans}
    assert kinds == {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}

    # the judged attempt: root, two model calls and one tool call, as recorded
    session = sessions["find-word"]
    root = roots["basic/find-word"]
    tree = [s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]]
    assert sorted(s["name"] for s in tree) == sorted(
        ["invoke_agent tool_agent:run", "chat agent-1", "chat agent-1", "execute_tool read"]
    )
    # metadata values are JSON-encoded, as the Langfuse SDK sends them
    assert json.loads(root["attributes"]["langfuse.trace.metadata.verdict"]) == "passed"
    assert root["status_code"] != "ERROR"
    chats = sorted((s for s in tree if s["name"] == "chat agent-1"), key=lambda s: s["start_time"])
    for span, turn in zip(chats, session.turns, strict=True):
        a = span["attributes"]
        assert a["gen_ai.usage.input_tokens"] == turn.call.usage.input_tokens
        assert a["gen_ai.usage.output_tokens"] == turn.call.usage.output_tokens
        assert a["gen_ai.response.id"] == turn.call.response_id
    (tool,) = (s for s in tree if s["name"] == "execute_tool read")
    assert tool["attributes"]["gen_ai.tool.call.id"] == session.tool_calls[0].call.id

    # the crashed attempt is an error, the quarantined failure is not
    assert roots["basic/explodes"]["status_code"] == "ERROR"
    assert roots["basic/flaky"]["status_code"] != "ERROR"

    # token totals: the agent's trace holds the agent's tokens only; the judge's are apart
    traces = {t["trace_id"]: t for t in phoenix.all(f"/v1/projects/{name}/traces")}
    assert len(traces) == len(roots)
    agent_total = traces[root["context"]["trace_id"]]["token_count_total"]
    assert agent_total == session.usage.input_tokens + session.usage.output_tokens
    grading = roots["grade basic/find-word"]
    (judge_exchange,) = judge_exchanges(session)
    judge_call = decode_call(judge_exchange)
    assert judge_call is not None
    judge_total = traces[grading["context"]["trace_id"]]["token_count_total"]
    assert judge_total == judge_call.usage.input_tokens + judge_call.usage.output_tokens > 0
    assert grading["name"] == "chat judge-1"

    # sessions: the run's attempts in one, its grading in another
    grouped = {
        s["session_id"]: {t["trace_id"] for t in s["traces"]}
        for s in phoenix.all(f"/v1/projects/{name}/sessions")
    }
    assert grouped == {
        record.run_id: {roots[f"basic/{c}"]["context"]["trace_id"] for c in CASES},
        record.run_id + "/grading": {grading["context"]["trace_id"]},
    }

    # sending again gives the same ids: Phoenix keeps one copy of each span
    again = evaltape(project, phoenix.url, name, "export", record.run_id, "--again")
    assert f"exported {len(CASES)} of {len(CASES)} attempt(s)" in again
    time.sleep(1.0)  # Phoenix inserts in the background: give a duplicate time to land
    assert len(phoenix.all(f"/v1/projects/{name}/spans")) == expected
