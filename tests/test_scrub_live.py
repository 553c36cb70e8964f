"""A fresh ``evaltape live`` recording replays unchanged with no code change, although the
agent's tool prints the absolute workspace path (scrubbed automatically) and the time
(scrubbed by one rule in the config); and a session recorded under a custom base URL path
replays without repeating ``--base-url``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import Exchange, TapeReader
from evaltape.recorder._shared import WORKSPACE_PLACEHOLDER

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
CASE = '{"id": "where", "prompt": "where are you?", "failureCategory": "scrub", "whyModelBacked": "demo", "expectMaxTurns": 3}\n'  # noqa: E501
TIME_RULE = "[scrub]\n'\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d+' = \"<time>\"\n"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


def make_project(root: Path, *, rule: bool) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "scrub.jsonl").write_text(CASE)
    config = 'agent = "pwd_agent:run"\n' + (TIME_RULE if rule else "")
    (root / "evaltape.toml").write_text(config)
    return root


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALTAPE_"))}
    env["PYTHONPATH"] = str(AGENTS)
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def live(project: Path, base_url: str) -> None:
    result = evaltape(
        project, "live", "--update-cassettes", "-m", "fake-1", "--base-url", base_url,
        "--source", "simulated", "--source-detail", "tests/agents/chat_server.py",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_workspace_path_and_time_are_scrubbed_so_replay_is_unchanged(
    server: ChatServer, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "p", rule=True)
    live(project, server.url)
    (session,) = TapeReader(project / "cassettes" / "scrub" / "where.tape").sessions()
    bodies = b"".join(
        e.request.body + (e.response.body if e.response else b"")
        for e in session.events
        if isinstance(e, Exchange)
    )
    assert f"cwd={WORKSPACE_PLACEHOLDER} at <time>".encode() in bodies
    assert b"/tmp" not in bodies and str(tmp_path).encode() not in bodies
    for _ in range(2):  # a new workspace folder and a new time on each replay
        result = evaltape(project, "replay")
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.splitlines()[-1] == "OK: 1 attempt replayed, harness unchanged"


def test_without_the_time_rule_the_tool_output_differs(server: ChatServer, tmp_path: Path) -> None:
    # The tool's output goes back as a user message after the model spoke: without the
    # rule its time differs, which reads as the harness's observation changing.
    project = make_project(tmp_path / "p", rule=False)
    live(project, server.url)
    result = evaltape(project, "replay")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "HARNESS CHANGED tool result changed: observation (1 distinct edit)" in result.stdout
    # The rule added afterwards fixes the recording without re-recording it.
    fixed = evaltape(project, "replay", "--scrub", r"\d{4}-\d\d-\d\dT[\d:.]+=<time>")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_a_custom_base_url_path_replays_without_the_flag(
    server: ChatServer, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "p", rule=True)
    live(project, server.url.replace("/v1", "/custom/v1"))
    assert server.requests  # the server answered under /custom/v1
    result = evaltape(project, "replay")
    assert result.returncode == 0, result.stdout + result.stderr
