"""Replay names what the harness changed: planted harness bugs are harness changes, not stale.

Four cases of a local suite are recorded live with a copy of the reference
agent against a 127.0.0.1 server that plays a competent model.  Then one bug
at a time is planted in the copy: a tool that returns other data for the same
call, a read-only mode that stops refusing writes, a loop that stops sending
tool results back.  Each is reported as a harness change naming the tool,
with exit 1; re-recording is never the advice.  A one-word edit of the system
prompt is the one stale case: one group, one distinct edit, exit 3.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.forced_chat_server import ForcedChatServer
from builders import forced_agent_env

REPO = Path(__file__).parent.parent
AGENT = "agent_under_test"
MODEL = "fake-model"
SUITE = "harness"
CASES = [
    {
        "id": "read-notes",
        "prompt": "What is on the second line of notes.txt?",
        "files": {"notes.txt": "alpha\nbeta\ngamma\n"},
        "plan": [["read", {"path": "notes.txt"}]],
        "answer": "beta",
    },
    {
        "id": "list-files",
        "prompt": "Which files are in the project folder?",
        "files": {"a.txt": "1\n", "b.txt": "2\n", "c.txt": "3\n"},
        "plan": [["ls", {"path": "."}]],
        "answer": "a.txt, b.txt and c.txt",
    },
    {
        "id": "find-todo",
        "prompt": "Where is the TODO in this project?",
        "files": {"main.py": "x = 1\n# TODO: remove\ny = 2\n"},
        "plan": [["grep", {"pattern": "TODO"}]],
        "answer": "main.py line 2",
    },
    {
        "id": "refuse-write",
        "prompt": "Write 'x' to out.txt.",
        "files": {"keep.txt": "k\n"},
        "mode": "read-only",
        "plan": [["write", {"path": "out.txt", "content": "x"}]],
        "answer": "I cannot write files in read-only mode.",
    },
]


def suite_line(case: dict[str, object]) -> str:
    line: dict[str, object] = {
        "id": case["id"],
        "prompt": case["prompt"],
        "failureCategory": "harness",
        "whyModelBacked": "the model picks the tool",
        "files": case["files"],
        "expectMaxTurns": 6,
    }
    if "mode" in case:
        line["agentMode"] = case["mode"]
    return json.dumps(line)


def copy_agent(root: Path) -> None:
    """The reference agent copied into ``root`` as the package ``AGENT``: the harness under test."""
    shutil.copytree(
        REPO / "evals" / "agent", root / AGENT, ignore=shutil.ignore_patterns("__pycache__")
    )
    for module in (root / AGENT).glob("*.py"):
        module.write_text(module.read_text().replace("evals.agent.", f"{AGENT}."))


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = forced_agent_env()
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project with every case recorded live once; the servers are gone afterwards."""
    root = tmp_path_factory.mktemp("recorded")
    copy_agent(root)
    (root / "suites").mkdir()
    (root / "suites" / f"{SUITE}.jsonl").write_text("".join(suite_line(c) + "\n" for c in CASES))
    (root / "evaltape.toml").write_text(
        f'suites = "suites"\ncassettes = "cassettes"\nresults = "results"\nagent = "{AGENT}:run"\n'
    )
    for case in CASES:
        plan = [(name, args) for name, args in case["plan"]]  # type: ignore[attr-defined]
        with ForcedChatServer(plan, str(case["answer"])) as server:
            live = evaltape(
                root, "live", "--update-cassettes", "-m", MODEL, "--base-url", server.url,
                "--cases", str(case["id"]), "--source", "simulated",
                "--source-detail", "tests/agents/forced_chat_server.py",
            )  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
    yield root


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded project, free to break."""
    return Path(shutil.copytree(recorded, tmp_path / "project"))


def plant(project: Path, module: str, intact: str, broken: str) -> None:
    path = project / AGENT / module
    source = path.read_text()
    assert source.count(intact) == 1, f"{intact!r} should occur once in {path}"
    path.write_text(source.replace(intact, broken))


def lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return result.stdout.splitlines()


@pytest.mark.slow
def test_the_intact_harness_replays_unchanged(project: Path) -> None:
    result = evaltape(project, "replay")
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines(result)[-1] == "OK: 4 attempts replayed, harness unchanged"
    assert "HARNESS CHANGED" not in result.stdout and "STALE" not in result.stdout


TOOL_BUGS = {
    "read is off by one line": (
        "_tools.py",
        'text = "".join(lines[start - 1 : end])',
        'text = "".join(lines[start:end])',
        "read",
        "read-notes",
        '{"path":"notes.txt"}',
        "-alpha",
    ),
    "ls drops an entry": (
        "_tools.py",
        'return "\\n".join(entries[:MAX_ENTRIES])',
        'return "\\n".join(entries[:MAX_ENTRIES][:-1])',
        "ls",
        "list-files",
        '{"path":"."}',
        "-c.txt",
    ),
    "grep finds nothing": (
        "_tools.py",
        'return "\\n".join([*(hits or ["no matches"]), *notes])',
        'return "no matches"',
        "grep",
        "find-todo",
        '{"pattern":"TODO"}',
        "+no matches",
    ),
    "read-only mode stops refusing writes": (
        "_tools.py",
        "if self._mode not in MUTATING_MODES:",
        "if self._mode not in MUTATING_MODES and False:",
        "write",
        "refuse-write",
        '"path":"out.txt"',
        "-refused: write out.txt is not allowed in read-only mode",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(TOOL_BUGS))
def test_a_tool_that_returns_other_data_is_a_harness_change(project: Path, bug: str) -> None:
    module, intact, broken, tool, case_id, arguments, diff = TOOL_BUGS[bug]
    plant(project, module, intact, broken)
    result = evaltape(project, "replay")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert f"HARNESS CHANGED tool result changed: {tool} (1 distinct edit): 1 attempt" in out
    example = next(ln for ln in lines(result) if ln.startswith("  e.g. "))
    assert f"{SUITE}/{case_id} {MODEL} (attempt 1): tool result changed: {tool}" in example
    assert arguments in example.replace(" ", "")
    assert any(ln.strip().startswith(diff) for ln in lines(result)), out
    assert "Do not re-record" in out
    assert lines(result)[-1] == "FAIL: 1 tool result changed (see above)"
    assert re.search(r"^STALE", out, re.MULTILINE) is None


@pytest.mark.slow
def test_a_loop_that_stops_sending_tool_results_changed_the_conversation(project: Path) -> None:
    plant(
        project,
        "_loop.py",
        'self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})',
        "pass",
    )
    result = evaltape(project, "replay")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "HARNESS CHANGED conversation changed" in out
    assert "4 attempts" in out
    assert "no longer sent" in out
    assert "FAIL: 4 conversations changed (see above)" in out


@pytest.mark.slow
def test_a_system_prompt_edit_is_one_stale_group(project: Path) -> None:
    plant(project, "_prompts.py", '"Keep the reply short."', '"Keep the reply brief."')
    result = evaltape(project, "replay")
    out = result.stdout
    assert result.returncode == 3, out + result.stderr
    (group,) = [ln for ln in lines(result) if ln.startswith("STALE ")]
    assert group == f"STALE system prompt changed (1 distinct edit): 4 attempts, suite {SUITE}"
    assert len([ln for ln in lines(result) if ln.startswith("  e.g. ")]) == 1
    assert any(ln.strip() == "-Keep the reply short." for ln in lines(result)), out
    assert any(ln.strip() == "+Keep the reply brief." for ln in lines(result)), out
    assert "record these sessions live again" in out
    assert "STALE: 4 recordings stale" in out
    verbose = evaltape(project, "replay", "-v")
    assert len([ln for ln in lines(verbose) if f"{SUITE}/" in ln and "system prompt" in ln]) == 4
