"""``evaltape report`` of an A/B run: both variants side by side and the cases that moved.

The A/B runs for real (a subprocess, the fake model server on 127.0.0.1, an
agent that takes two turns as variant A and one as B), so case
``one-turn`` improves and the others stay where they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeapi import FakeAPI

from evaltape.scoring import read_record

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evals.report_screenshot import chromium, open_page  # noqa: E402

pytestmark = pytest.mark.slow

CASES = [("one-turn", 1), ("roomy", 3)]


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AB_AGENT_"))}
    env |= {"PYTHONPATH": os.pathsep.join([str(AGENTS), str(REPO)]), "OPENAI_API_KEY": "sk-x"}
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def ab_run(tmp_path: Path, api: FakeAPI) -> tuple[Path, Path]:
    """A project and its A/B run's folder."""
    (tmp_path / "evals").mkdir()
    lines = [
        json.dumps(
            {
                "id": case_id,
                "prompt": f"work on {case_id}",
                "failureCategory": "ab",
                "whyModelBacked": "exercises the report of an A/B run",
                "expectMaxTurns": turns,
            }
        )
        for case_id, turns in CASES
    ]
    (tmp_path / "evals" / "basic.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "evaltape.toml").write_text(
        f'agent = "ab_agent:run"\nbase_url = "{api.openai_url}"\n'
    )
    done = evaltape(
        tmp_path, "ab", "--baseline", "env:AB_AGENT_TAG=A,AB_AGENT_TURNS=2",
        "--candidate", "env:AB_AGENT_TAG=B,AB_AGENT_TURNS=1", "--trials", "4",
        "-m", "fake-1", "--source", "simulated",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (tmp_path / ".evaltape" / "results" / "ab").iterdir()
    return tmp_path, folder


def test_an_ab_run_by_id_and_by_folder(ab_run: tuple[Path, Path], tmp_path: Path) -> None:
    project, folder = ab_run
    for spec in (folder.name, folder.name[:12], str(folder)):
        page = tmp_path / "ab.html"
        done = evaltape(project, "report", spec, "-o", str(page))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("NOT WORSE: A/B: 2 paired cases, +50.0 points")
        html = page.read_text()
        assert "<h2>Cases that moved</h2>" in html and "basic/one-turn</td><td>improved" in html
    both = evaltape(project, "report", folder.name, "--base", "latest", "-o", str(page))
    assert both.returncode == 2
    assert "an A/B run compares its own two sides; drop the base" in both.stderr


@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install -y chromium)"
)
def test_an_ab_report_in_chromium(ab_run: tuple[Path, Path], tmp_path: Path) -> None:
    project, folder = ab_run
    page = tmp_path / "ab.html"
    assert evaltape(project, "report", folder.name, "-o", str(page)).returncode == 0
    sides = {name: read_record(folder / f"{name}.json") for name in ("baseline", "candidate")}
    with open_page(page) as (tab, errors):
        rows = {
            tuple(td.inner_text() for td in r.locator("td").all()[:2]): r.locator("td").nth(4)
            for r in tab.locator("#rates tbody tr").all()
        }
        for label, name in (("A baseline", "baseline"), ("B candidate", "candidate")):
            passed = sum(a.verdict.value == "passed" for a in sides[name].attempts)
            cell = rows[(label, "basic")].inner_text()
            assert cell == f"{passed}/{len(sides[name].attempts)}"
        assert tab.locator("#moves tbody tr").count() == 1
        assert tab.locator("svg.plot line.move").count() == 1
        assert tab.locator("details.trace").count() == sum(len(s.attempts) for s in sides.values())
    assert errors == []
