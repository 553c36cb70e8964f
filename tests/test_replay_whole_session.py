"""Replay verdicts on harnesses of the shapes users write, classified as whole sessions.

Agents of our own (``tests/agents/shaped_agents.py``) on the real openai and
anthropic SDKs are recorded live against a scripted model on 127.0.0.1; the
server is gone before anything is replayed.  Then one change at a time is
planted through the agent's environment:

- a prompt edit that comes with a broken tool is a harness change naming both
  (exit 1), and ``rerecord`` refuses it; the prompt edit alone is stale (exit 3);
- a text (ReAct) agent's observations travel as user messages: an observation
  that loses its exit code, or commands run in the wrong folder, are harness
  changes (exit 1), never a stale user prompt; its system prompt edit is stale;
- an agent that crashes at its first replayed call, or stops after 2 of 4
  calls, changed the harness (exit 1), never "a FAIL that stayed FAIL".
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeapi import FakeAPI, Reply, ToolUse
from harness_project import evaltape

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
MODEL = "fake-model"
KEYS = {"OPENAI_API_KEY": "sk-test-0123456789abcdef", "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}
PROMPT_EDIT = " Be thorough."


def case_line(case_id: str, prompt: str, files: dict[str, str], **extra: object) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "harness",
            "whyModelBacked": "the model picks what to read",
            "files": files,
            "expectMaxTurns": 6,
            **extra,
        }
    )


NOTES = {"notes.txt": "alpha\nbeta\ngamma\n"}
THREE = {"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\nfour\n"}


def make_project(root: Path, agent: str, lines: list[str], api: FakeAPI) -> Path:
    """A project whose agent is ``shaped_agents:<agent>`` with the suite ``lines``."""
    root.mkdir(parents=True)
    shutil.copy(AGENTS / "shaped_agents.py", root / "shaped_agents.py")
    (root / "evals").mkdir()
    (root / "evals" / "shaped.jsonl").write_text("".join(line + "\n" for line in lines))
    (root / "evaltape.toml").write_text(
        'suites = "evals"\ncassettes = "cassettes"\nresults = ".evaltape/results"\n'
        f'agent = "shaped_agents:{agent}"\nbase_url = "{api.openai_url}"\n'
        f'upstream = {{ anthropic = "{api.base_url}" }}\n'
    )
    return root


def record(root: Path, api: FakeAPI, case_id: str, *replies: Reply) -> None:
    """Record one case live against ``api`` playing ``replies``."""
    api.script(*replies)
    live = evaltape(
        root, "live", "--update-cassettes", "-m", MODEL, "--cases", case_id,
        "--source", "simulated", "--source-detail", "tests/fakeapi.py", "--no-sandbox",
        env=KEYS,
    )  # fmt: skip
    assert live.returncode == 0, live.stdout + live.stderr
    assert f"{MODEL}: 1/1 passed" in live.stdout, live.stdout + live.stderr


def read(path: str) -> Reply:
    return Reply(text="", tool_calls=(ToolUse("read_file", {"path": path}),))


@pytest.fixture(scope="module")
def tools_recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Tool-call agents on both SDKs, recorded; the server is stopped afterwards."""
    base = tmp_path_factory.mktemp("tools")
    notes = case_line("read-notes", "What is on the second line of notes.txt?", NOTES,
                      expectAnswer={"contains": "beta"})  # fmt: skip
    three = case_line("read-three", "What do the three files say?", THREE,
                      expectAnswer={"contains": "four"})  # fmt: skip
    projects = {}
    with FakeAPI() as api:
        for agent in ("openai_tools", "anthropic_tools"):
            root = make_project(base / agent, agent, [notes, three], api)
            record(root, api, "read-notes", read("notes.txt"), Reply(text="It says beta."))
            record(
                root, api, "read-three", read("a.txt"), read("b.txt"), read("c.txt"),
                Reply(text="one, two, three and four"),
            )  # fmt: skip
            projects[agent] = root
    yield projects


@pytest.fixture
def tools(tools_recorded: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    """Private copies of the recorded projects."""
    return {a: Path(shutil.copytree(p, tmp_path / a)) for a, p in tools_recorded.items()}


def replay(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return evaltape(root, "replay", "--no-sandbox", *args, env=env)


def last(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout.splitlines()[-1]


@pytest.mark.parametrize("agent", ["openai_tools", "anthropic_tools"])
def test_the_intact_agent_replays_unchanged(tools: dict[str, Path], agent: str) -> None:
    result = replay(tools[agent])
    assert result.returncode == 0, result.stdout + result.stderr
    assert last(result) == "OK: 2 attempts replayed, harness unchanged"


@pytest.mark.parametrize("agent", ["openai_tools", "anthropic_tools"])
def test_a_prompt_edit_that_comes_with_a_tool_bug_names_both_and_fails(
    tools: dict[str, Path], agent: str
) -> None:
    result = replay(
        tools[agent], "--cases", "read-notes", AGENT_PROMPT=PROMPT_EDIT, AGENT_BUG="tool"
    )
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    changed = [ln for ln in out.splitlines() if ln.startswith("HARNESS CHANGED ")]
    assert changed == [
        "HARNESS CHANGED tool result changed: read_file (1 distinct edit): 1 attempt, suite shaped"
    ]
    assert any(ln.strip() == "-gamma" for ln in out.splitlines()), out
    stale = [ln for ln in out.splitlines() if ln.startswith("STALE ")]
    assert stale == ["STALE system prompt changed (1 distinct edit): 1 attempt, suite shaped"]
    assert "not re-recordable" in out
    assert any(ln.strip() == "+" + (SYSTEM_TEXT + PROMPT_EDIT) for ln in out.splitlines()), out
    assert last(result) == "FAIL: 1 tool result changed (see above)"
    # The same with --assume-same-model: the tool change still decides.
    assumed = replay(
        tools[agent], "--cases", "read-notes", "--assume-same-model",
        AGENT_PROMPT=PROMPT_EDIT, AGENT_BUG="tool",
    )  # fmt: skip
    assert assumed.returncode == 1, assumed.stdout + assumed.stderr
    assert "HARNESS CHANGED tool result changed: read_file" in assumed.stdout
    # Re-recording would record the broken tool as the truth: refused before any call.
    again = evaltape(tools[agent], "rerecord", "--no-sandbox", env={"AGENT_BUG": "tool"})
    assert again.returncode == 2, again.stdout + again.stderr
    assert "CHANGED" in again.stderr and "--accept-harness-changes" in again.stderr


SYSTEM_TEXT = "You are a careful assistant. Use the tools to answer, then reply in one line."


def test_a_prompt_edit_alone_is_stale(tools: dict[str, Path]) -> None:
    result = replay(tools["openai_tools"], AGENT_PROMPT=PROMPT_EDIT)
    assert result.returncode == 3, result.stdout + result.stderr
    stale = [ln for ln in result.stdout.splitlines() if ln.startswith("STALE ")]
    assert stale == ["STALE system prompt changed (1 distinct edit): 2 attempts, suite shaped"]
    assert "HARNESS CHANGED" not in result.stdout
    assert last(result) == (
        "STALE: 2 recordings stale, the harness's text changed (see above); nothing else changed"
    )


@pytest.mark.parametrize(
    ("agent", "case", "bug", "said"),
    [
        (
            "openai_tools", "read-notes", "own_client",  # its client never reaches the tape
            "the harness stopped after call 0 of 2: the agent failed: APIConnectionError",
        ),
        ("anthropic_tools", "read-three", "stop_after_2", "the harness stopped after call 2 of 4"),
    ],
)  # fmt: skip
def test_an_agent_that_stops_early_changed_the_harness(
    tools: dict[str, Path], agent: str, case: str, bug: str, said: str
) -> None:
    result = replay(tools[agent], "--cases", case, AGENT_BUG=bug)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "HARNESS CHANGED conversation changed (1 distinct edit): 1 attempt" in out
    assert f"conversation changed: {said}" in out
    assert last(result) == "FAIL: 1 conversation changed (see above)"


@pytest.fixture(scope="module")
def react_recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The text agent, recorded on one case of three model turns."""
    line = case_line(
        "second-line", "What is on the second line of notes.txt?", NOTES,
        expectAnswer={"contains": "beta"}, expectTool="bash",
        expectBashMatches=["^ls$", "^cat notes\\.txt$"],
    )  # fmt: skip
    with FakeAPI() as api:
        root = make_project(tmp_path_factory.mktemp("react") / "p", "react", [line], api)
        record(
            root, api, "second-line",
            Reply(text="Thought: see what is here.\nAction: ls"),
            Reply(text="Thought: read it.\nAction: cat notes.txt"),
            Reply(text="Final Answer: beta"),
        )  # fmt: skip
    yield root


@pytest.fixture
def react(react_recorded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(react_recorded, tmp_path / "react"))


def test_the_intact_text_agent_replays_unchanged_and_its_commands_are_scored(react: Path) -> None:
    # Recording passed expectTool "bash" and expectBashMatches only through the commands
    # the agent logged as tool_call events; the replay passes them again.
    result = replay(react, "-v")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "unchanged shaped/second-line fake-model (attempt 1): pass as recorded and as replayed"
        in (result.stdout)
    )
    assert last(result) == "OK: 1 attempt replayed, harness unchanged"


@pytest.mark.parametrize(
    ("bug", "removed", "added"),
    [
        ("rc", "-Observation (exit 0):", "+Observation:"),
        ("cwd", "-notes.txt", None),
    ],
)
def test_a_text_agents_observation_bug_is_a_harness_change(
    react: Path, bug: str, removed: str, added: str | None
) -> None:
    result = replay(react, AGENT_BUG=bug)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "HARNESS CHANGED tool result changed: observation" in out
    assert 'after "Action: ls"' in out
    assert "STALE" not in out
    lines = [ln.strip() for ln in out.splitlines()]
    assert removed in lines, out
    if added is not None:
        assert added in lines, out
    assert "Do not re-record" in out
    assert last(result) == "FAIL: 1 tool result changed (see above)"


def test_a_text_agents_system_prompt_edit_is_stale(react: Path) -> None:
    result = replay(react, AGENT_PROMPT=PROMPT_EDIT)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "STALE system prompt changed (1 distinct edit): 1 attempt" in result.stdout
    assert "HARNESS CHANGED" not in result.stdout
