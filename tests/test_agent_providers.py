"""Command agents as ``evaltape live`` / ``replay`` run them: one proxy endpoint per
provider, each key only ever sent to its own provider, and no network in replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fakeapi import FakeAPI

from evaltape.recorder import Exchange, RecordingTransport, TapeReader, fold
from evaltape.replay import RoutedProxies, agent_routes, parse_route, run_program
from evaltape.replay._shared import AgentNetns, IsolationUnavailable
from evaltape.scoring import Verdict, read_record, resolve_run

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent
OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-fedcba9876543210"


def project(root: Path, agent: str, **settings: object) -> Path:
    (root / "evals").mkdir(parents=True)
    case = {
        "id": "ask",
        "prompt": "hello",
        "failureCategory": "runner",
        "whyModelBacked": "exercises command agents against fake providers",
        "expectMaxTurns": 3,
    }
    (root / "evals" / "basic.jsonl").write_text(json.dumps(case) + "\n")
    lines = [f"agent = {json.dumps(agent)}"]
    lines += [f"{k} = {toml_value(v)}" for k, v in settings.items()]
    (root / "evaltape.toml").write_text("\n".join(lines) + "\n")
    return root


def toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def evaltape(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base |= {"PYTHONPATH": str(REPO), "OPENAI_API_KEY": OPENAI_KEY}
    base |= {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=root,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def agent_cmd(script: str, *extra: str) -> str:
    return f"cmd:{sys.executable} {AGENTS / script} {{prompt}} {' '.join(extra)}".rstrip()


def replayed_session(root: Path) -> object:
    record = read_record(resolve_run(root / ".evaltape" / "results"))
    (attempt,) = record.attempts
    (session,) = TapeReader(root / ".evaltape" / "results" / attempt.tape).sessions()
    return attempt, fold(session.events), session


def test_a_command_agent_records_and_replays_two_providers_each_seeing_only_its_key(
    tmp_path: Path,
) -> None:
    with FakeAPI() as gpt, FakeAPI() as claude:
        root = project(
            tmp_path,
            agent_cmd("two_providers_agent.py"),
            base_url=gpt.openai_url,
            upstream={"anthropic": claude.base_url},
        )
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1")
        assert live.returncode == 0, live.stdout + live.stderr
        assert "fake-1: 1/1 passed" in live.stdout
        assert [r.path for r in gpt.requests] == ["/v1/chat/completions"]
        assert [r.path for r in claude.requests] == ["/v1/messages"]
        for seen, own, other in ((gpt, OPENAI_KEY, ANTHROPIC_KEY), (claude, ANTHROPIC_KEY, "")):
            headers = " ".join(f"{k}: {v}" for r in seen.requests for k, v in r.headers.items())
            assert own in headers
            assert (other or OPENAI_KEY) not in headers
    (recorded,) = TapeReader(root / "cassettes" / "basic" / "ask.tape").sessions()
    urls = [e.request.url for e in recorded.events if isinstance(e, Exchange)]
    assert urls == [gpt.openai_url + "/chat/completions", claude.base_url + "/v1/messages"]
    both = "echo: hello | echo: hello again"
    assert {f.path: f.data for f in fold(recorded.events).workspace} == {"reply.txt": both.encode()}

    # Both servers are gone: the replay is answered by the tape alone, both providers.
    replay = evaltape(root, "replay")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "OK: 1 attempt replayed, harness unchanged" in replay.stdout
    attempt, view, _ = replayed_session(root)
    assert attempt.verdict is Verdict.PASSED
    assert {f.path: f.data for f in view.workspace} == {"reply.txt": both.encode()}


def test_a_key_sent_to_another_providers_endpoint_is_refused_and_never_forwarded(
    tmp_path: Path,
) -> None:
    with FakeAPI() as gpt, FakeAPI() as claude:
        root = project(
            tmp_path,
            agent_cmd("two_providers_agent.py", "--cross"),
            base_url=gpt.openai_url,
            upstream={"anthropic": claude.base_url},
        )
        live = evaltape(root, "live", "-m", "fake-1")
        assert gpt.requests == [] and claude.requests == []
    record = read_record(resolve_run(root / ".evaltape" / "results"))
    (attempt,) = record.attempts
    assert attempt.verdict is not Verdict.PASSED, live.stdout
    assert "refused a request to the openai endpoint carrying another provider's API key" in (
        attempt.reason
    )


def test_a_replayed_command_agent_cannot_reach_a_non_loopback_address(tmp_path: Path) -> None:
    with FakeAPI() as gpt:
        root = project(tmp_path, agent_cmd("netprobe_agent.py"), base_url=gpt.openai_url)
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1")
        assert live.returncode == 0, live.stdout + live.stderr
    replay = evaltape(root, "replay")
    try:
        AgentNetns.open(1).close()
    except IsolationUnavailable:
        assert "network isolation unavailable" in replay.stdout + replay.stderr
        return
    assert replay.returncode == 0, replay.stdout + replay.stderr
    _, view, _ = replayed_session(root)
    files = {f.path: f.data.decode() for f in view.workspace}
    assert files["reply.txt"] == "echo: hello"
    assert files["net.txt"].splitlines() == ["blocked OSError", "interfaces lo"]


def test_a_replay_opted_out_of_isolation_runs_the_agent_on_the_machines_network(
    tmp_path: Path,
) -> None:
    with FakeAPI() as gpt:
        root = project(tmp_path, agent_cmd("netprobe_agent.py"), base_url=gpt.openai_url)
        assert evaltape(root, "live", "--update-cassettes", "-m", "fake-1").returncode == 0
    replay = evaltape(root, "replay", EVALTAPE_AGENT_NETWORK="open")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    _, view, _ = replayed_session(root)
    files = {f.path: f.data.decode() for f in view.workspace}
    assert "interfaces lo" not in files["net.txt"].splitlines()


def test_a_malformed_upstream_is_refused_in_one_line_before_anything_runs(tmp_path: Path) -> None:
    root = project(tmp_path, agent_cmd("netprobe_agent.py"), upstream={"groq": "ftp://x"})
    refused = evaltape(root, "live", "-m", "fake-1")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "evaltape: error: evaltape.toml: setting \"upstream\": 'groq=ftp://x': 'ftp://x' is "
        "not an http(s) URL"
    )
    assert not (root / ".evaltape").exists()


class Tape:
    """The least a recording transport writes into: a list and a clock."""

    def __init__(self) -> None:
        self.events: list[Exchange] = []

    def append(self, event: Exchange) -> None:
        self.events.append(event)

    def now(self) -> float:
        return float(len(self.events))


def test_an_upstream_the_user_adds_gets_its_own_endpoint_and_variable(tmp_path: Path) -> None:
    program = (
        "import json, os, urllib.request\n"
        "req = urllib.request.Request(os.environ['GROQ_BASE_URL'] + '/chat/completions',\n"
        "    data=json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]})"
        ".encode(),\n"
        "    headers={'content-type': 'application/json',\n"
        "             'authorization': 'Bearer ' + os.environ['GROQ_API_KEY']})\n"
        "print(json.loads(urllib.request.urlopen(req).read())['choices'][0]['message']['content'])\n"
    )
    tape = Tape()
    with FakeAPI() as groq:
        routes = agent_routes(extra=[parse_route(f"groq={groq.base_url}/v1")])
        env = {"PATH": os.environ["PATH"], "GROQ_API_KEY": "gsk-test-0123456789"}
        env |= {"OPENAI_API_KEY": OPENAI_KEY}
        transport = RecordingTransport(tape, httpx.HTTPTransport())
        with RoutedProxies(transport, routes, environ=env, replaying=False, timeout=10) as proxies:
            assert proxies.env()["GROQ_BASE_URL"].endswith("/v1")
            assert proxies.env()["GROQ_BASE_URL"] != proxies.env()["OPENAI_BASE_URL"]
            result = run_program(
                [sys.executable, "-c", program], cwd=tmp_path, proxy=proxies, timeout=30, env=env
            )
        assert result.exit_code == 0, result.stderr
        assert [r.path for r in groq.requests] == ["/v1/chat/completions"]
        assert groq.requests[0].headers["authorization"] == "Bearer gsk-test-0123456789"
    assert result.stdout.strip() == "echo: hi"
    assert [e.request.url for e in tape.events] == [f"{groq.base_url}/v1/chat/completions"]
