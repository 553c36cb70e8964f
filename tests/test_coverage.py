"""``evaltape coverage``: what recorded attempts can catch, per tool and case, and --mutate.

The tally is pinned on built sessions; the shipped cassettes show the claim
that matters: in the coding suite, bash, glob and ls are exercised only by the
real-model set's failing attempts, so a side-effect bug there cannot be caught.
``--mutate`` plants the standard mutations in a temporary copy of the
reference agent and replays the simulated coding set: the side-effect
mutations of write and edit come back as REGRESSIONs, and the mutations of
tools no coding attempt calls are reported missed.  The repository's agent is
never touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from builders import exchange, forced_agent_env, tool_call
from test_ci_formats import paths

from evaltape.recorder import Mode, SessionStarted, Source, TapeReader, fold
from evaltape.scoring import Case, Verdict
from evaltape.scoring.run.mutate._operators import find_mutations, mutated_source
from evaltape.scoring.verdicts._coverage import Attempt, ToolState, tally

REPO = Path(__file__).parent.parent
CHAT = "https://api.example.test/v1/chat/completions"
PASSED, FAILED = Verdict.PASSED, Verdict.FAILED
TOOLS = [{"type": "function", "function": {"name": n}} for n in ("read", "write", "ls", "bash")]


def cli(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = forced_agent_env()
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "coverage", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def case(case_id: str, *, verify: str | None) -> Case:
    return Case(
        suite="s", path="s.jsonl", line=1, id=case_id, prompt="p", failure_category="t",
        why_model_backed="t", fingerprint="", verify=verify,
    )  # fmt: skip


def session(*calls: str, carried: bool = True) -> object:
    """A session whose model calls each tool of ``calls`` in turn, then answers; with
    ``carried`` each result goes back in the next request."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    events: list[object] = [SessionStarted(session_id="s1", started_at=0.0, case_id="c")]
    for n, name in enumerate([*calls, ""]):
        reply: dict[str, object] = (
            {"role": "assistant", "tool_calls": [tool_call(f"c{n}", name, {})]}
            if name
            else {"role": "assistant", "content": "done"}
        )
        body = {"model": "m", "messages": list(messages), "tools": TOOLS}
        events.append(exchange(CHAT, body, {"choices": [{"message": reply}]}, at=float(n)))
        messages.append(reply)
        if name and carried:
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "ok"})
    return fold(events)  # type: ignore[arg-type]


def test_each_tool_gets_the_state_its_attempts_give_it() -> None:
    checked, unchecked = case("fix", verify="python check.py"), case("ask", verify=None)
    coverage = tally(
        [
            Attempt(case=checked, session=session("read", "write"), verdict=PASSED),
            Attempt(case=checked, session=session("bash"), verdict=FAILED),
            Attempt(case=unchecked, session=session("ls", carried=False), verdict=PASSED),
        ]
    )
    (suite,) = coverage.suites
    states = {t.tool: t.state for t in suite.tools}
    assert states == {
        "read": ToolState.GUARDED,
        "write": ToolState.GUARDED,
        "ls": ToolState.UNCHECKED,
        "bash": ToolState.FAILING_ONLY,
    }
    ls = next(t for t in suite.tools if t.tool == "ls")
    assert ls.results_unseen and ls.unseen == ls.calls == 1
    bash = next(t for t in suite.tools if t.tool == "bash")
    assert bash.line == (
        "bash: exercised by 0 passing attempts with an outcome check (1 failing) — "
        "a side-effect bug in bash cannot be caught"
    )
    assert suite.verdict == (
        "s: 2 of 4 tool(s) guarded by passing attempts (read, write); failing only: bash; "
        "unchecked: ls; results unseen: ls"
    )
    assert [(c.case_id, c.attempts, c.passing, c.tools) for c in suite.cases] == [
        ("ask", 1, 1, (("ls", 1),)),
        ("fix", 2, 1, (("bash", 1), ("read", 1), ("write", 1))),
    ]


def test_a_tool_offered_but_never_called_is_named() -> None:
    coverage = tally([Attempt(case=case("c", verify="x"), session=session(), verdict=PASSED)])
    (suite,) = coverage.suites
    assert {t.tool for t in suite.tools if t.state is ToolState.NEVER_CALLED} == {
        "read", "write", "ls", "bash",
    }  # fmt: skip
    assert suite.tools[0].line.endswith("never called — nothing guards it")


AGENT_SOURCE = """\
import os


def helper(names):
    return sorted(names)


class Tools:
    def _write(self, path, data):
        with open(path, "w") as f:
            f.write(data)
        return "wrote"

    def _ls(self, path):
        return "\\n".join(sorted(os.listdir(path)))
"""


def test_mutations_go_into_tool_functions_only_one_site_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT_SOURCE)
    found = find_mutations(tmp_path, {"write", "ls"})
    assert [(m.tool, m.operator, m.line) for m in found] == [
        ("ls", "empty-result", 14),
        ("ls", "reverse-listing", 15),
        ("write", "drop-last-byte", 11),
        ("write", "skip-write", 11),
        ("write", "empty-result", 9),
    ]
    dropped = mutated_source(AGENT_SOURCE, found[2], {"write", "ls"})
    assert "f.write(data[:-1])" in dropped
    assert "return sorted(names)" in dropped  # the helper is no tool
    assert "sorted(os.listdir(path))" in dropped  # the other tool is intact
    reversed_ = mutated_source(AGENT_SOURCE, found[1], {"write", "ls"})
    assert "sorted(os.listdir(path), reverse=True)" in reversed_
    assert "f.write(data)" in reversed_
    assert "return ''" in mutated_source(AGENT_SOURCE, found[0], {"ls"})


def _failing_callers(tool: str) -> dict[str, set[str]]:
    """Per source label, the coding sessions that call ``tool`` (read from the tapes)."""
    found: dict[str, set[str]] = defaultdict(set)
    for tape in sorted(REPO.glob("cassettes/**/*.tape")):
        for recorded in TapeReader(tape).sessions():
            s = fold(recorded.events)
            coding = "/coding/" in f"/{tape.relative_to(REPO)}"
            if (
                coding
                and s.header.mode is Mode.LIVE
                and any(r.call.name == tool for r in s.tool_calls)
            ):
                found[s.header.source.value].add(s.session_id)
    return found


@pytest.mark.slow
def test_the_shipped_cassettes_name_tools_only_failing_real_model_attempts_guard(
    tmp_path: Path,
) -> None:
    result = cli("--json", "--results", str(tmp_path / "results"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "evaltape.coverage/1"
    coding = next(s for s in doc["suites"] if s["suite"] == "coding")
    failing_only = {t["tool"]: t for t in coding["tools"] if t["state"] == "failing only"}
    assert sorted(failing_only) == ["bash", "glob", "ls"]
    for tool, row in failing_only.items():
        callers = _failing_callers(tool)
        assert set(callers) == {Source.LOCAL_SERVER.value}, tool  # the real-model set only
        assert row["failing"] == len(callers[Source.LOCAL_SERVER.value]) > 0
        assert row["passing"] == row["unchecked"] == 0
    guarded = {t["tool"] for t in coding["tools"] if t["state"] == "guarded"}
    assert {"edit", "write", "read"} <= guarded
    assert "failing only: bash, glob, ls" in coding["verdict"]

    text = cli("--suite", "coding", "--results", str(tmp_path / "results"))
    assert text.returncode == 0, text.stderr
    assert (
        "  bash: exercised by 0 passing attempts with an outcome check "
        f"({failing_only['bash']['failing']} failing) — a side-effect bug in bash cannot be "
        "caught"
    ) in text.stdout.splitlines()
    assert text.stdout.splitlines()[-1].startswith("verdict coding: 5 of 8 tool(s) guarded")


@pytest.mark.slow
def test_mutate_catches_side_effect_bugs_via_the_simulated_set_and_names_what_it_misses(
    tmp_path: Path,
) -> None:
    agent = {p: p.read_bytes() for p in (REPO / "evals" / "agent").glob("*.py")}
    result = cli(
        "cassettes/simulated", "--suite", "coding", "--mutate", "--json",
        "--results", str(tmp_path / "results"), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert {p: p.read_bytes() for p in agent} == agent  # only a temporary copy was mutated
    document = json.loads(result.stdout)
    assert undocumented(document) == set()
    mutations = document["mutations"]
    by = {(m["tool"], m["operator"]): m for m in mutations["mutations"]}
    for side_effect in [("write", "drop-last-byte"), ("write", "skip-write"),
                        ("edit", "drop-last-byte"), ("edit", "skip-write")]:  # fmt: skip
        m = by[side_effect]
        assert m["caught"], m
        # Only the end state can show it (a later read of the file may show it too).
        assert any(line.endswith(": regression") for line in m["by"]), m
    assert by[("read", "empty-result")]["caught"]  # a changed result: a harness change
    assert all(line.endswith(": changed") for line in by[("read", "empty-result")]["by"])
    missed = sorted((m["tool"], m["operator"]) for m in mutations["mutations"] if not m["caught"])
    assert missed == [
        ("bash", "empty-result"),
        ("glob", "empty-result"),
        ("glob", "reverse-listing"),
        ("ls", "empty-result"),
        ("ls", "reverse-listing"),
    ]
    assert by[("ls", "reverse-listing")]["note"] == "no recorded attempt calls ls"
    assert mutations["caught"] == len(mutations["mutations"]) - 5
    assert mutations["score"] == round(mutations["caught"] / len(mutations["mutations"]), 4)
    lines = result.stderr.splitlines()
    assert any(ln.startswith("[") and " MISSED ls: " in ln for ln in lines), result.stderr


def test_mutate_refuses_a_command_agent_in_one_line(tmp_path: Path) -> None:
    tape = "cassettes/simulated/trajectory/read-named-file.tape"
    result = cli(tape, "--mutate", "--agent", "cmd:true", "--results", str(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        'evaltape: error: --mutate needs a Python agent ("module:function"); agent "true" is '
        "a command, whose tools it cannot copy"
    ]


def test_a_missing_tape_is_a_usage_error(tmp_path: Path) -> None:
    result = cli(str(tmp_path / "nothing.tape"))
    assert result.returncode == 2
    assert "nothing.tape" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_report_of_a_replay_shows_its_coverage(tmp_path: Path) -> None:
    results = ("--results", str(tmp_path / "results"), "--cassettes", "cassettes/simulated")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"EVALTAPE_AGENT_STRATEGY": "forced", "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", *args, *results],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    replay = run("replay", "--suite", "coding")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    page = tmp_path / "report.html"
    report = run("report", "latest", "-o", str(page))
    assert report.returncode == 0, report.stdout + report.stderr
    html = page.read_text()
    assert '<h2 id="coverage">Coverage</h2>' in html
    assert (
        '<p class="verdict" data-suite="coding">coding: 5 of 8 tool(s) guarded by passing '
        "attempts (edit, grep, next_action, read, write); never called: bash, glob, ls; "
        "results unseen: next_action</p>"
    ) in html
    assert '<tr data-tool="write" title="write: exercised by 9 passing attempt(s)' in html


def undocumented(document: dict[str, object]) -> set[str]:
    """Fields of a coverage document that docs/json.md's coverage section does not list."""
    text = (REPO / "docs" / "json.md").read_text()
    body = text.split("\n## `coverage`\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+)` \|", body, re.MULTILINE))
    written = {p for p in paths(document) if not p.startswith("suites[].cases[].tools.")}
    return written - listed


@pytest.mark.slow
def test_every_field_of_the_json_document_is_documented() -> None:
    result = cli("cassettes/simulated/coding/create-named-file.tape", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert undocumented(document) == set()
    assert document["mutations"] is None and document["attempts"] == 3


@pytest.mark.slow
def test_mutate_refuses_when_the_intact_agent_does_not_replay_unchanged(tmp_path: Path) -> None:
    """A prompt edit makes the recording stale: no mutant could be told apart from it."""
    project = tmp_path / "project"
    agent = project / "agent_under_test"
    shutil.copytree(REPO / "evals" / "agent", agent, ignore=shutil.ignore_patterns("__pycache__"))
    for module in agent.glob("*.py"):
        module.write_text(module.read_text().replace("evals.agent", "agent_under_test"))
    prompts = agent / "_prompts.py"
    prompts.write_text(prompts.read_text().replace("Keep the reply short.", "Be brief."))
    (project / "suites").mkdir()
    shutil.copy(REPO / "evals" / "coding.jsonl", project / "suites" / "coding.jsonl")
    (project / "cassettes" / "coding").mkdir(parents=True)
    tape = "coding/create-named-file.tape"
    shutil.copy(REPO / "cassettes" / "simulated" / tape, project / "cassettes" / tape)
    (project / "evaltape.toml").write_text(
        'suites = "suites"\ncassettes = "cassettes"\nresults = "results"\n'
        'agent = "agent_under_test:run"\n'
        'executor = "ray"\n'  # the copies replay in this process's threads whatever it says
    )
    result = cli("--mutate", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == (
        "evaltape: error: the intact copy of the agent does not replay unchanged (replay exit "
        "3); run evaltape replay and fix that first, or no mutant could be told apart"
    )
    assert not (project / "results").exists()  # the copies' replays wrote nothing here


TINY_AGENT = '''\
"""A one-tool agent in one module: it writes the file the model asks for, then answers."""

import json
import os

WRITE = {
    "type": "function",
    "function": {
        "name": "write",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}


def write(workspace, path, content):
    with open(os.path.join(workspace, path), "w") as f:
        f.write(content)
    return "wrote " + path


def run(task):
    url = task.base_url.rstrip("/") + "/chat/completions"
    messages = [{"role": "user", "content": task.prompt}]
    force = {"type": "function", "function": {"name": "write"}}
    body = {"model": task.model, "messages": messages, "tools": [WRITE], "tool_choice": force}
    message = task.client.post(url, json=body).json()["choices"][0]["message"]
    call = message["tool_calls"][0]
    result = write(str(task.workspace), **json.loads(call["function"]["arguments"]))
    messages += [message, {"role": "tool", "tool_call_id": call["id"], "content": result}]
    body = {"model": task.model, "messages": messages, "tools": [WRITE], "tool_choice": "none"}
    return task.client.post(url, json=body).json()["choices"][0]["message"]["content"]
'''


@pytest.mark.slow
def test_mutate_takes_a_top_level_module_agent(tmp_path: Path) -> None:
    from agents.forced_chat_server import ForcedChatServer

    project = tmp_path / "project"
    (project / "suites").mkdir(parents=True)
    (project / "tiny_agent.py").write_text(TINY_AGENT)
    case = {
        "id": "write-hello",
        "prompt": "Write hello to out.txt.",
        "failureCategory": "tools",
        "whyModelBacked": "the model picks the file",
        "files": {"keep.txt": "k\n"},
        "verify": "python -c \"assert open('out.txt').read() == 'hello\\\\n'\"",
    }
    (project / "suites" / "tiny.jsonl").write_text(json.dumps(case) + "\n")
    (project / "evaltape.toml").write_text(
        'suites = "suites"\ncassettes = "cassettes"\nresults = "results"\n'
        'agent = "tiny_agent:run"\n'
    )
    plan = [("write", {"path": "out.txt", "content": "hello\n"})]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with ForcedChatServer(plan, "Done.") as server:
        live = subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", "live", "--update-cassettes",
             "-m", "fake-model", "--base-url", server.url, "--source", "simulated"],
            cwd=project, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert live.returncode == 0, live.stdout + live.stderr
    source = (project / "tiny_agent.py").read_text()
    result = cli("--mutate", "--json", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "tiny_agent.py").read_text() == source
    found = {
        (m["tool"], m["operator"]): (m["caught"], [b.rsplit(": ", 1)[1] for b in m["by"]])
        for m in json.loads(result.stdout)["mutations"]["mutations"]
    }
    assert found == {
        ("write", "drop-last-byte"): (True, ["regression"]),
        ("write", "skip-write"): (True, ["regression"]),
        ("write", "empty-result"): (True, ["changed"]),
    }


@pytest.mark.slow
def test_a_session_whose_case_is_gone_is_named_and_left_out(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "suites").mkdir(parents=True)
    (project / "cassettes" / "coding").mkdir(parents=True)
    lines = (REPO / "evals" / "coding.jsonl").read_text().splitlines()
    kept = next(line for line in lines if json.loads(line)["id"] == "create-named-file")
    (project / "suites" / "coding.jsonl").write_text(kept + "\n")
    for name in ("create-named-file", "fix-off-by-one"):
        tape = f"coding/{name}.tape"
        shutil.copy(REPO / "cassettes" / "simulated" / tape, project / "cassettes" / tape)
    (project / "evaltape.toml").write_text('suites = "suites"\ncassettes = "cassettes"\n')
    result = cli("--json", cwd=project)
    assert result.returncode == 0, result.stderr
    gone = [ln for ln in result.stderr.splitlines() if "no longer exists" in ln]
    assert len(gone) == 3 and all("(fix-off-by-one)" in ln for ln in gone), result.stderr
    document = json.loads(result.stdout)
    assert document["attempts"] == 3 and len(document["skipped"]) == 3
