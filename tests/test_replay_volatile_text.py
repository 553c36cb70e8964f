"""Text that differs on every run or machine never makes a replay stale by itself.

A command-line-style agent (``shaped_agents.dated``) writes today's date, its
project folder as a dash-mangled path and the machine's kernel release into
its system prompt.  Recorded live against a scripted model on 127.0.0.1:

- the workspace path, in its plain and dash-mangled forms, is scrubbed without
  any rule, so the only text proposed for scrubbing is the date;
- ``live`` proposes the date rule at the end and ``lint --volatile`` lists it;
  with only that rule pasted into the config, the recording replays unchanged on
  another day (an injected clock), while without it the replay is stale;
- a scrub rule added after recording rewrites the recorded request too: another
  kernel is stale until ``--scrub`` masks it, then the old cassette replays OK.

Also here: a replay that could not run any attempt never passes (exit 2), and a
replayed body read a second time yields nothing.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from builders import CHAT_URL, exchange
from fakeapi import FakeAPI, Reply
from harness_project import evaltape

from evaltape.replay import ReplayTransport

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
MODEL = "fake-model"
KEYS = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
RECORDED_ON = {**KEYS, "AGENT_UNAME": "6.1.0-17-amd64"}
"""The machine the recording was made on (its kernel); the date is the real today."""


def make_project(root: Path, api_url: str) -> Path:
    root.mkdir(parents=True)
    shutil.copy(AGENTS / "shaped_agents.py", root / "shaped_agents.py")
    (root / "evals").mkdir()
    case = {
        "id": "greet",
        "prompt": "Say hello.",
        "failureCategory": "harness",
        "whyModelBacked": "the model writes the reply",
        "expectAnswer": {"contains": "hello"},
    }
    (root / "evals" / "cli.jsonl").write_text(json.dumps(case) + "\n")
    (root / "evaltape.toml").write_text(
        'suites = "evals"\ncassettes = "cassettes"\nresults = ".evaltape/results"\n'
        f'agent = "shaped_agents:dated"\nbase_url = "{api_url}"\n'
    )
    return root


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The project with two trials of the case recorded today, and live's stderr."""
    with FakeAPI() as api:
        root = make_project(tmp_path_factory.mktemp("dated") / "p", api.openai_url)
        api.script(Reply(text="hello there"), Reply(text="hello there"))
        live = evaltape(
            root, "live", "--update-cassettes", "-m", MODEL, "--trials", "2",
            "--concurrency", "1", "--source", "simulated", "--source-detail", "tests/fakeapi.py",
            "--no-sandbox", env=RECORDED_ON,
        )  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
        assert f"{MODEL}: 2/2 passed" in live.stdout, live.stdout + live.stderr
        sent = [r.json()["messages"][0]["content"] for r in api.requests]
    # The prompt really carried the volatile text.
    assert all("-evaltape-" in s and "Today's date is" in s for s in sent), sent
    yield root, live.stderr


@pytest.fixture
def project(recorded: tuple[Path, str], tmp_path: Path) -> Path:
    return Path(shutil.copytree(recorded[0], tmp_path / "p"))


def replay(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return evaltape(root, "replay", "--no-sandbox", *args, env=env)


def another_day() -> str:
    return (datetime.date.today() + datetime.timedelta(days=9)).isoformat()


def proposed(text: str) -> list[str]:
    """The rule lines of a proposal block (``'REGEX' = 'REPLACEMENT'  # why``), as written."""
    return [ln.strip() for ln in text.splitlines() if ln.startswith(("  '", '  "'))]


def rules_of(lines: list[str]) -> dict[str, str]:
    """The rules those lines are, read as the config file would read them."""
    return tomllib.loads("\n".join(lines))


def test_live_proposes_only_the_date_and_lint_lists_it(
    recorded: tuple[Path, str], project: Path
) -> None:
    _, live_stderr = recorded
    assert "volatile text: 1 scrub rule(s) proposed" in live_stderr, live_stderr
    rules = rules_of(proposed(live_stderr))
    assert rules == {r"(?<=Today's date is )\d{4}-\d{2}-\d{2}": "<date>"}, live_stderr
    lint = evaltape(project, "lint", "--volatile", "cassettes")
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert rules_of(proposed(lint.stdout)) == rules


def test_the_recording_replays_unchanged_today(project: Path) -> None:
    result = replay(project, **RECORDED_ON)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "OK: 2 attempts replayed, harness unchanged"


def test_on_another_day_only_the_proposed_rules_make_it_unchanged(
    recorded: tuple[Path, str], project: Path
) -> None:
    later = {**RECORDED_ON, "AGENT_TODAY": another_day()}
    stale = replay(project, **later)
    assert stale.returncode == 3, stale.stdout + stale.stderr
    assert "STALE system prompt changed" in stale.stdout
    config = project / "evaltape.toml"
    block = "\n".join(proposed(recorded[1]))
    config.write_text(config.read_text() + "\n[scrub]\n" + block + "\n")
    result = replay(project, **later)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "OK: 2 attempts replayed, harness unchanged"
    # Nothing is left to propose once the rule is in the config.
    lint = evaltape(project, "lint", "--volatile", "cassettes")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_a_scrub_rule_added_after_recording_fixes_the_old_cassette(project: Path) -> None:
    elsewhere = {**KEYS, "AGENT_UNAME": "6.18.2-arch1-1"}
    stale = replay(project, **elsewhere)
    assert stale.returncode == 3, stale.stdout + stale.stderr
    assert "-Platform: Linux 6.1.0-17-amd64" in stale.stdout
    before = {p: p.read_bytes() for p in (project / "cassettes").rglob("*.tape")}
    fixed = replay(project, "--scrub", r"Linux [\w.+-]+=Linux <kernel>", **elsewhere)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.splitlines()[-1] == "OK: 2 attempts replayed, harness unchanged"
    # Fixed without re-recording: the cassettes are as they were.
    assert {p: p.read_bytes() for p in before} == before


def test_a_replay_in_which_no_attempt_could_run_is_never_green(project: Path) -> None:
    results = project / ".evaltape" / "results"
    shutil.rmtree(results / "tapes", ignore_errors=True)
    (results / "tapes").write_text("not a folder: no replay tape can be written here\n")
    result = replay(project, "--json", "out.json", **RECORDED_ON)
    assert result.returncode == 2, result.stdout + result.stderr
    untested = [ln for ln in result.stdout.splitlines() if ln.startswith("UNTESTED ")]
    assert len(untested) == 3, result.stdout  # two attempts, and nothing replayed at all
    assert "the replay could not run it" in untested[0]
    assert "no attempt was replayed" in untested[-1]
    assert result.stdout.splitlines()[-1] == (
        "FAIL: 2 attempts could not run (errors), 1 problem left something untested "
        "(see UNTESTED above)"
    )
    out = json.loads((project / "out.json").read_text())
    assert (out["exit_code"], out["replayed"], out["errors"]) == (2, 0, 2)


def test_a_replayed_body_read_a_second_time_yields_nothing() -> None:
    recorded = exchange(CHAT_URL, {"model": "m", "messages": []}, {"id": "x", "ok": True})
    transport = ReplayTransport([recorded], ignore_headers=("accept", "content-type"))
    with httpx.Client(transport=transport) as client:
        request = client.build_request("POST", CHAT_URL, json={"model": "m", "messages": []})
        response = client.send(request, stream=True)
        first = b"".join(response.stream)
        again = b"".join(response.stream)
        response.close()
    assert json.loads(first) == {"id": "x", "ok": True}
    assert again == b""
