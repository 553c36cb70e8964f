"""The adoption journey as a new user walks it: every line they read names what
happened and what to run next.

Each test drives the real command line in subprocesses against a chat server on
127.0.0.1 (``echo: <prompt>`` with usage): the progress of ``rerecord``, the
recorded cost of a replay, the live summary, the SDK clients an agent may use,
``--price`` on the command line, regressions grouped like stale edits, and the
error lines of a first ``live`` and a first ``replay``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from harness_project import MODEL, evaltape, make_project, plant

from evaltape.scoring import Score, read_record, resolve_run
from evaltape.scoring.outputs.console._replay_report import Row, outcomes
from evaltape.scoring.verdicts._replaycheck import Change, ReplayDecision

pytestmark = pytest.mark.slow

PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) :: (\S+) \(attempt (\d+)\) (\S+)", re.M)
EDIT = "    system = SYSTEM\n"
"""The harness line a prompt edit changes."""
PROMPT_EDIT = '    system = SYSTEM + " Also be polite."\n'


def recorded(root: Path, server: ChatServer, *ids: str, trials: int = 1) -> Path:
    """A project whose cases are recorded live into its cassettes."""
    project = make_project(root, list(ids), server.url)
    live = evaltape(project, "live", "-m", MODEL, "--trials", str(trials), "--update-cassettes")
    assert live.returncode == 0, live.stdout + live.stderr
    return project


def counters(text: str) -> list[tuple[int, int, str]]:
    """``(k, total, word)`` of each progress line, in order."""
    return [(int(m[1]), int(m[2]), m[6]) for m in PROGRESS.finditer(text)]


def test_rerecord_says_stale_not_error_and_counts_each_run_from_one(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta", trials=2)
    plant(project, EDIT, PROMPT_EDIT)
    done = evaltape(project, "rerecord")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ERROR" not in done.stderr
    lines = counters(done.stderr)
    replay, live = lines[:4], lines[4:]
    assert [(k, total, word) for k, total, word in replay] == [
        (k, 4, "STALE") for k in range(1, 5)
    ], done.stderr
    assert [(k, total, word) for k, total, word in live] == [(k, 4, "PASS") for k in range(1, 5)]
    plan = done.stderr.index("rerecord from replay run")
    assert done.stderr.index("replaying the recordings") < plan
    assert all(m.start() > plan for m in PROGRESS.finditer(done.stderr) if m[6] == "PASS")


def test_what_a_replay_cost_when_recorded_is_read_from_the_tape(
    tmp_path: Path, server: ChatServer
) -> None:
    price = ("--price", f"{MODEL}=1000/2000")
    project = make_project(tmp_path, ["alpha"], server.url)
    live = evaltape(project, "live", "-m", MODEL, "--update-cassettes", *price)
    assert live.returncode == 0, live.stdout + live.stderr
    spent = re.search(r"^  cost: (\$[\d.]+) estimated · ([\d,]+ tokens)", live.stdout, re.M)
    assert spent is not None, live.stdout
    # The harness now stops before its model call: the replayed session holds no call.
    plant(project, "    # edits\n", '    raise RuntimeError("broken before the model")\n')
    replay = evaltape(project, "replay", *price)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "stopped after call 0 of 1" in replay.stdout
    assert f"what they cost when recorded: {spent[1]} recorded · {spent[2]} · " in replay.stdout


def test_a_plain_live_run_prints_no_usage_block(tmp_path: Path, server: ChatServer) -> None:
    project = make_project(tmp_path, ["alpha"], server.url)
    live = evaltape(project, "live", "-m", MODEL)
    assert live.returncode == 0, live.stdout + live.stderr
    model = next(x for x in live.stdout.splitlines() if x.startswith(f"{MODEL}: 1/1 passed"))
    assert re.search(r"\d+ tokens \(\d+ in, \d+ out\)", model)
    assert "Usage:" not in live.stdout
    assert not [x for x in live.stdout.splitlines() if "Cache read" in x or "Reasoning" in x]


SDK_AGENT = '''"""An OpenAI-SDK agent handed evaltape's clients two ways."""

import asyncio
import os

from openai import OpenAI

from evaltape.scoring import Task


def run(task: Task) -> str:
    messages = [{"role": "user", "content": task.prompt}]
    if os.environ.get("SDK_WAY") == "async":
        async def ask() -> str:
            client = task.openai(async_=True)
            reply = await client.chat.completions.create(model=task.model, messages=messages)
            return reply.choices[0].message.content or ""
        return asyncio.run(ask())
    client = OpenAI(
        base_url=task.base_url,
        api_key=task.environ.get("OPENAI_API_KEY", "no-key-needed-in-replay"),
        http_client=task.client,
    )
    reply = client.chat.completions.create(model=task.model, messages=messages)
    return reply.choices[0].message.content or ""
'''


@pytest.mark.parametrize("way", ["sync", "async"])
def test_the_openai_sdk_takes_task_client_and_task_openai(
    tmp_path: Path, server: ChatServer, way: str
) -> None:
    project = make_project(tmp_path, ["alpha"], server.url)
    (project / "sdk_agent.py").write_text(SDK_AGENT)
    env = {"SDK_WAY": way, "OPENAI_API_KEY": "sk-test-0123456789abcdefghij"}
    args = ("--agent", "sdk_agent:run")
    live = evaltape(project, "live", "-m", MODEL, "--update-cassettes", *args, env=env)
    assert live.returncode == 0, live.stdout + live.stderr
    assert PROGRESS.search(live.stderr)[6] == "PASS", live.stderr  # type: ignore[index]
    sent = len(server.requests)
    replay = evaltape(project, "replay", *args, env={"SDK_WAY": way})
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replay.stdout.splitlines()[-1] == "OK: 1 attempt replayed, harness unchanged"
    assert len(server.requests) == sent


def test_price_on_the_command_line_prices_and_budgets_a_free_model(
    tmp_path: Path, server: ChatServer
) -> None:
    project = recorded(tmp_path, server, "alpha", trials=2)
    plant(project, EDIT, PROMPT_EDIT)
    unpriced = evaltape(project, "rerecord", "--budget", "1")
    assert unpriced.returncode == 2
    assert f"pass --price {MODEL}=IN/OUT" in unpriced.stderr.splitlines()[-1]

    (project / "prices.json").write_text(json.dumps({MODEL: {"input": 1000, "output": 2000}}))
    by_file = evaltape(project, "replay", "--pricing", "prices.json")
    by_flag = evaltape(project, "replay", "--price", f"{MODEL}=1000/2000")
    cost = [x for x in by_file.stdout.splitlines() if x.startswith("what they cost")]
    assert cost and cost == [x for x in by_flag.stdout.splitlines() if x.startswith("what they")]

    bad = evaltape(project, "rerecord", "--price", f"{MODEL}=free")
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        f'evaltape: error: --price "{MODEL}=free": expected MODEL=IN/OUT, USD per million '
        "input and output tokens as numbers >= 0 (e.g. --price my-model=0/0 for a free "
        "local model)"
    ]

    sent = len(server.requests)
    free = evaltape(project, "rerecord", "--price", f"{MODEL}=0/0", "--budget", "0")
    assert free.returncode == 0, free.stdout + free.stderr
    assert "estimated cost: $0.0000" in free.stderr
    assert len(server.requests) == sent + 2
    assert "re-recorded 2 of 2 attempt(s)" in free.stdout


REGRESSION_SUITE = [
    {
        "id": case_id,
        "prompt": f"say {case_id}",
        "failureCategory": "harness",
        "whyModelBacked": "the model writes the reply",
        "files": {"notes.txt": "the harness saves the reply beside this file\n"},
        "verify": ["test", "-s", "reply.txt"],
    }
    for case_id in ("alpha", "beta")
]
SAVE = '    (task.workspace / "reply.txt").write_text(data["choices"][0]["message"]["content"])\n'
"""The harness line that saves the reply: recorded with it, replayed without it."""


def test_regressions_come_one_line_per_case_and_model_with_attempts_counted(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, [], server.url)
    lines = [json.dumps(c) for c in REGRESSION_SUITE]
    (project / "evals" / "basic.jsonl").write_text("\n".join(lines) + "\n")
    returns = '    return str(data["choices"]'
    plant(project, returns, SAVE + returns)
    live = evaltape(project, "live", "-m", MODEL, "--trials", "3", "--update-cassettes")
    assert live.returncode == 0, live.stdout + live.stderr
    assert live.stderr.count(" PASS") == 6, live.stderr
    # Same requests, but the harness no longer saves the reply: every attempt regresses.
    plant(project, SAVE, "")
    replay = evaltape(project, "replay")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    found = [x for x in replay.stdout.splitlines() if x.startswith("REGRESSION")]
    assert [x.split(" (recorded")[0] for x in found] == [
        f"REGRESSION basic/alpha {MODEL}: 3 of 3 attempts",
        f"REGRESSION basic/beta {MODEL}: 3 of 3 attempts",
    ]
    assert all(x.endswith(")") and "(recorded: pass; replayed: " in x for x in found)
    assert replay.stdout.splitlines()[-1] == "FAIL: 6 regressions (see above)"

    verbose = evaltape(project, "replay", "-v")
    each = [x for x in verbose.stdout.splitlines() if x.startswith("REGRESSION")]
    assert sorted(x.split(":")[0] for x in each) == sorted(
        f"REGRESSION basic/{c} {MODEL} (attempt {n})" for c in ("alpha", "beta") for n in (1, 2, 3)
    )


def test_an_agent_importing_scoring_is_told_the_import_to_write(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, ["alpha"], server.url)
    (project / "old_agent.py").write_text(
        "from scoring import Task\n\n\ndef run(task: Task) -> str:\n    return ''\n"
    )
    live = evaltape(project, "live", "-m", MODEL, "--agent", "old_agent:run")
    assert live.returncode == 2, live.stdout + live.stderr
    last = live.stderr.splitlines()[-1]
    assert "No module named 'scoring'" in last
    assert last.endswith("(e.g. `from evaltape.scoring import Task`)")
    assert "Traceback" not in live.stderr


def test_a_replay_with_no_cassettes_names_the_run_just_recorded(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(tmp_path, ["alpha"], server.url)
    empty = evaltape(project, "replay")
    assert empty.returncode == 2
    assert empty.stderr.splitlines() == [
        "evaltape: error: cassettes: no such file or folder; nothing to replay; record into "
        "the cassettes with `evaltape live --update-cassettes`, then replay"
    ]
    live = evaltape(project, "live", "-m", MODEL)
    assert live.returncode == 0, live.stdout + live.stderr
    run_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id
    refused = evaltape(project, "replay")
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    command = f"evaltape replay .evaltape/results/tapes/{run_id}"
    assert f"to replay the run just recorded: `{command}`" in line
    assert line.endswith("or record into the cassettes with `evaltape live --update-cassettes`")
    again = evaltape(project, *shlex.split(command)[1:])
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize(
    ("name", "common", "rare"),
    [
        ("live", ("--model", "--trials", "--update-cassettes", "--price"), ("--ray-address",)),
        ("replay", ("--latest", "--assume-same-model", "--price"), ("--scrub", "--executor")),
    ],
)
def test_help_lists_the_everyday_options_first(
    tmp_path: Path, name: str, common: tuple[str, ...], rare: tuple[str, ...]
) -> None:
    shown = evaltape(tmp_path, name, "--help")
    assert shown.returncode == 0, shown.stderr
    first, _, rest = shown.stdout.partition("\nMore options:\n")
    everyday = first.partition("\nCommon options:\n")[2]
    assert everyday and rest
    for flag in common:
        assert re.search(rf"^ +(-\w, )?{flag}\b", everyday, re.M), flag
    for flag in rare:
        assert re.search(rf"^ +{flag}\b", rest, re.M) and flag not in everyday, flag
    assert len(everyday.splitlines()) < len(rest.splitlines())


def test_docs_say_when_to_use_task_client_and_task_openai() -> None:
    running = (Path(__file__).parent.parent / "docs" / "running.md").read_text()
    assert "http_client=task.client" in running
    assert "task.openai(async_=True)" in running


def test_a_regression_line_counts_the_other_reasons_and_improvements_are_grouped_too() -> None:
    def row(attempt: int, change: Change, why: str) -> Row:
        passed, failed = Score(passed=True, reason="ok"), Score(passed=False, reason=why)
        worse = change is Change.REGRESSION
        return Row(
            suite="s",
            case_id="c",
            model="m",
            attempt=attempt,
            decision=ReplayDecision(
                change=change, rescored=passed if worse else failed, replayed=failed
            ),
        )

    rows = [row(0, Change.REGRESSION, "a"), row(1, Change.REGRESSION, "b")]
    rows.append(row(2, Change.UNCHANGED, "-"))
    assert outcomes(rows) == (
        "REGRESSION s/c m: 2 of 3 attempts (recorded: pass; replayed: a; 1 other reason, "
        "-v lists each attempt)",
    )
    assert len(outcomes(rows, verbose=True)) == 3
    better = [
        Row(
            suite="s",
            case_id="c",
            model="m",
            attempt=n,
            decision=ReplayDecision(
                change=Change.IMPROVEMENT,
                rescored=Score(passed=False, reason="was wrong"),
                replayed=Score(passed=True, reason="ok"),
            ),
        )
        for n in range(3)
    ]
    assert outcomes(better) == (
        "improvement s/c m: 3 of 3 attempts (recorded: was wrong; replayed: pass)",
    )
