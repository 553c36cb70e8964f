"""The shipped simulated cassettes catch harness bugs that only change files.

``cassettes/simulated`` holds live recordings of the reference agent against
the simulated competent model (``evals/sim/competent_model.py``), whose
attempts pass.  A copy of the agent replays them with one bug planted in its
tools at a time; each bug leaves every tool message as it was, so the tape
serves every request and only the rescored end state (the case's ``verify``)
can show it: as a REGRESSION of the coding cases the bug touches.  The intact
copy replays unchanged.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from evaltape.recorder import TapeReader, fold

REPO = Path(__file__).parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from builders import forced_agent_env  # noqa: E402

from evals.sim.competent_model import CompetentModel, prompts, serve  # noqa: E402
from evals.sim.plans import PLANS  # noqa: E402

SHIPPED = REPO / "cassettes" / "simulated"
AGENT = "agent_under_test"
TOOLS_PY = Path(AGENT) / "_tools.py"
MODEL = "simulated-competent"
SUITE = "coding"


def coding_cases() -> list[str]:
    lines = (REPO / "evals" / f"{SUITE}.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()]


def planned(tool: str) -> list[str]:
    """Coding cases whose plan calls ``tool``."""
    return [c for c in coding_cases() if any(name == tool for name, _ in PLANS[c].steps)]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with a copy of the agent, the shipped suites and the simulated tapes."""
    root = tmp_path_factory.mktemp("shipped")
    shutil.copytree(
        REPO / "evals" / "agent", root / AGENT, ignore=shutil.ignore_patterns("__pycache__")
    )
    for module in (root / AGENT).glob("*.py"):
        module.write_text(module.read_text().replace("evals.agent.", f"{AGENT}."))
        assert not re.search(r"^(from|import) evals\b", module.read_text(), re.MULTILINE)
    (root / "suites").mkdir()
    for suite in (REPO / "evals").glob("*.jsonl"):
        shutil.copy(suite, root / "suites" / suite.name)
    shutil.copytree(REPO / "evals" / "rubrics", root / "suites" / "rubrics")
    shutil.copytree(SHIPPED, root / "cassettes")
    settings = {"suites": "suites", "cassettes": "cassettes", "results": "results"}
    settings["agent"] = f"{AGENT}:run"
    (root / "evaltape.toml").write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    return root


@pytest.fixture
def project(shipped: Path, tmp_path: Path) -> Path:
    """A private copy of the shipped project, free to break."""
    return Path(shutil.copytree(shipped, tmp_path / "project"))


def replay(project: Path) -> subprocess.CompletedProcess[str]:
    env = forced_agent_env()
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "replay", "--suite", SUITE],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def break_tool(project: Path, intact: str, broken: str) -> None:
    """Change one piece of the copied tools' source, which must occur exactly once."""
    path = project / TOOLS_PY
    source = path.read_text()
    assert source.count(intact) == 1, f"{intact!r} should occur once in {path}"
    path.write_text(source.replace(intact, broken))


def regressed(result: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """Case id -> attempts its REGRESSION line counts (one line per case and model)."""
    out: dict[str, int] = {}
    for line in result.stdout.splitlines():
        found = re.match(
            rf"REGRESSION {SUITE}/(\S+) {MODEL}: (\d+) of \d+ attempts? \(recorded: pass;", line
        )
        if found:
            assert found[1] not in out, f"{found[1]} has more than one REGRESSION line"
            out[found[1]] = int(found[2])
    return out


def assert_regressions(result: subprocess.CompletedProcess[str], cases: list[str]) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert cases, "the bug should touch at least one coding case"
    assert regressed(result) == dict.fromkeys(cases, 3), result.stdout
    assert not [ln for ln in result.stdout.splitlines() if ln.startswith(("STALE", "HARNESS"))]


def test_every_case_has_a_plan_and_every_tape_names_the_program() -> None:
    assert set(prompts(REPO / "evals").values()) == set(PLANS)
    tapes = sorted(SHIPPED.rglob("*.tape"))
    assert {t.stem for t in tapes} == set(PLANS)
    for tape in tapes:
        sessions = list(TapeReader(tape).sessions())
        assert len(sessions) == 3, tape
        for session in sessions:
            header = fold(session.events).header
            assert header.source.value == "simulated", tape
            assert header.source_detail == "evals/sim/competent_model.py", tape
            assert header.model == MODEL


@pytest.mark.slow
def test_the_intact_harness_replays_unchanged(project: Path) -> None:
    result = replay(project)
    assert result.returncode == 0, result.stdout + result.stderr
    board = [ln.split() for ln in result.stdout.splitlines() if ln.startswith(f"{SUITE} ")]
    attempts = 3 * len(coding_cases())
    passed = f"{attempts}/{attempts}"
    assert board == [[SUITE, str(len(coding_cases())), str(attempts), passed, passed] + ["0"] * 5]
    last = result.stdout.strip().splitlines()[-1]
    assert last == f"OK: {attempts} attempts replayed, harness unchanged", last


@pytest.mark.slow
def test_a_write_that_drops_its_last_byte_is_a_regression(project: Path) -> None:
    # Same "wrote N bytes" message (N counted before the cut): only the file differs.
    break_tool(project, "f.write(data)", "f.write(data[:-1])")
    assert_regressions(replay(project), planned("write"))


@pytest.mark.slow
def test_an_edit_that_is_not_saved_is_a_regression(project: Path) -> None:
    break_tool(
        project,
        'with open(real, "w", encoding="utf-8") as f:\n'
        "            f.write(text.replace(old, new, 1))\n",
        "pass  # not saved\n",
    )
    assert_regressions(replay(project), planned("edit"))


@pytest.mark.slow
def test_a_write_to_the_wrong_file_is_a_regression(project: Path) -> None:
    break_tool(project, 'with open(real, "wb") as f:', 'with open(real + ".bak", "wb") as f:')
    assert_regressions(replay(project), planned("write"))


def test_the_bugs_touch_every_coding_case() -> None:
    assert set(planned("write")) == {
        "create-named-file",
        "write-greet-function",
        "implement-fizzbuzz",
    }
    assert set(planned("write")) | set(planned("edit")) == set(coding_cases())


@pytest.mark.slow
def test_the_simulated_model_refuses_what_no_plan_covers() -> None:
    server = serve(CompetentModel(prompts(REPO / "evals"), PLANS), 0)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    try:
        known = next(iter(prompts(REPO / "evals")))
        for body, says in (
            ({"messages": [{"role": "user", "content": "no such case"}]}, "no case has the prompt"),
            ({"messages": [{"role": "user", "content": known}], "tool_choice": "auto"}, "forced"),
        ):
            reply = httpx.post(url, json=body, timeout=10)
            assert reply.status_code == 400
            assert says in reply.json()["error"]["message"]
        answer = httpx.post(
            url, json={"messages": [{"role": "user", "content": known}], "tool_choice": "none"}
        )
        assert answer.status_code == 200
        case = prompts(REPO / "evals")[known]
        assert answer.json()["choices"][0]["message"]["content"] == PLANS[case].answer
    finally:
        server.shutdown()
        server.server_close()
