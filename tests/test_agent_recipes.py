"""Every recipe of docs/agents.md, run verbatim from docs/examples/agents: a two-turn
tool-calling session recorded live against a 127.0.0.1 server, then replayed with the
server gone.  The page's code blocks are the example files, byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakeapi import FakeAPI, Reply, ToolUse

from evaltape.recorder import Exchange, TapeReader, fold
from evaltape.scoring import Verdict, read_record, resolve_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
EXAMPLES = REPO / "docs" / "examples" / "agents"
PROMPT = "What is 2 + 3? Use the add tool."
ANSWER = "2 + 3 = 5"


@pytest.fixture(scope="session")
def node_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the Node recipe and the npm ``openai`` package it imports."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Node agent recipe")
    folder = tmp_path_factory.mktemp("node-agent")
    shutil.copy(REPO / "tests" / "node" / "package.json", folder)
    shutil.copy(EXAMPLES / "node_agent.mjs", folder)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder


def project(root: Path, agent: str, api: FakeAPI) -> Path:
    (root / "evals").mkdir(parents=True)
    case = {
        "id": "add",
        "prompt": PROMPT,
        "failureCategory": "runner",
        "whyModelBacked": "a framework's tool-calling loop against a fake model",
        "expectMaxTurns": 5,
    }
    (root / "evals" / "basic.jsonl").write_text(json.dumps(case) + "\n")
    (root / "evaltape.toml").write_text(
        f"agent = {json.dumps(agent)}\n"
        f"base_url = {json.dumps(api.openai_url)}\n"
        f"upstream = {{ anthropic = {json.dumps(api.base_url)} }}\n"
    )
    return root


def evaltape(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env |= {"PYTHONPATH": os.pathsep.join([str(EXAMPLES), str(REPO)])}
    env |= {"OPENAI_API_KEY": "sk-test-openai-0123456789", "ANTHROPIC_API_KEY": "sk-ant-test-9"}
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


PYTHON_RECIPES = [
    "openai_sync",
    "openai_async",
    "anthropic_sync",
    "anthropic_async",
    "anthropic_stream",
    "openai_agents_agent",
    "pydantic_ai_agent",
    "langchain_agent",
]


def record_and_replay(tmp_path: Path, agent: str, *, tool: bool = True) -> None:
    with FakeAPI() as api:
        if tool:
            api.script(Reply(tool_calls=(ToolUse("add", {"a": 2, "b": 3}),)), Reply(text=ANSWER))
        else:
            api.script(Reply(text=ANSWER))
        root = project(tmp_path, agent, api)
        live = evaltape(root, "live", "--update-cassettes", "-m", "fake-1")
        assert live.returncode == 0, live.stdout + live.stderr
        assert "fake-1: 1/1 passed" in live.stdout, live.stdout + live.stderr
        assert len(api.requests) == (2 if tool else 1)
        if tool:  # the second turn carries the tool's result back to the model
            assert re.search(r'"content": ?"5"', api.requests[1].body.decode())
    (recorded,) = TapeReader(root / "cassettes" / "basic" / "add.tape").sessions()
    assert fold(recorded.events).reply == ANSWER

    replay = evaltape(root, "replay")  # the server is gone: the tape answers
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "OK: 1 attempt replayed, harness unchanged" in replay.stdout
    results = root / ".evaltape" / "results"
    (attempt,) = read_record(resolve_run(results)).attempts
    assert attempt.verdict is Verdict.PASSED
    (session,) = TapeReader(results / attempt.tape).sessions()
    exchanges = [e for e in session.events if isinstance(e, Exchange)]
    assert len(exchanges) == (2 if tool else 1)
    assert fold(session.events).reply == ANSWER


@pytest.mark.parametrize("module", PYTHON_RECIPES)
def test_a_python_framework_recipe_records_and_replays(tmp_path: Path, module: str) -> None:
    record_and_replay(tmp_path, f"{module}:run")


def test_the_litellm_recipe_records_and_replays_through_the_proxy(tmp_path: Path) -> None:
    record_and_replay(tmp_path, f"cmd:{sys.executable} {EXAMPLES / 'litellm_agent.py'} {{prompt}}")


def test_the_node_recipe_records_and_replays(tmp_path: Path, node_folder: Path) -> None:
    record_and_replay(tmp_path, f"cmd:node {node_folder / 'node_agent.mjs'} {{prompt}}")


def test_the_curl_recipe_records_and_replays(tmp_path: Path) -> None:
    record_and_replay(tmp_path, f"cmd:sh {EXAMPLES / 'curl_agent.sh'} {{prompt}}", tool=False)


def test_the_pages_code_blocks_are_the_example_files() -> None:
    page = (REPO / "docs" / "agents.md").read_text()
    for example in sorted(EXAMPLES.iterdir()):
        source = example.read_text()
        assert f"<!-- {example.name} -->\n```" in page, example.name
        block = page.split(f"<!-- {example.name} -->\n```", 1)[1].split("\n", 1)[1]
        assert block.split("\n```\n", 1)[0] + "\n" == source, example.name
