"""docs/quickstart.md works as written: its commands, run verbatim, do what it says.

The tutorial's files live in docs/examples/quickstart/ and appear in the page
word for word.  Every ``sh`` block of the page runs, in order, in one shell in
a copy of that folder, with ``OPENAI_BASE_URL`` pointing at a ChatServer on
127.0.0.1 (the page's own way to use another server) and pip kept off the
network; every ``text`` block (the output the page promises) appears in what
they printed.  Then the CI workflow's ``run`` steps replay the recording.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from agents.chat_server import ChatServer

REPO = Path(__file__).parent.parent
PAGE = REPO / "docs" / "quickstart.md"
EXAMPLE = REPO / "docs" / "examples" / "quickstart"
WORKFLOW = ".github/workflows/evals.yml"


def fenced(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)\n```$", PAGE.read_text(encoding="utf-8"), re.S | re.M)


def shell(project: Path, script: str, server: ChatServer) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_", "PIP_")) and k != "PYTHONPATH"
    }
    env |= {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "OPENAI_BASE_URL": server.url,
        "PIP_NO_INDEX": "1",  # the package is installed already; pip must not go online
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_tutorial_files_are_on_the_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    files = [p for p in EXAMPLE.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert {p.relative_to(EXAMPLE).as_posix() for p in files} == {
        "support_agent.py",
        "evaltape_agent.py",
        "evaltape.toml",
        "evals/support.jsonl",
        WORKFLOW,
    }
    for path in files:
        assert path.read_text(encoding="utf-8").rstrip("\n") in page, path


@pytest.mark.slow
def test_the_quickstart_commands_run_verbatim(tmp_path: Path, server: ChatServer) -> None:
    project = Path(shutil.copytree(EXAMPLE, tmp_path / "myagent"))
    commands = fenced("sh")
    assert commands[0] == "pip install evaltape openai"
    done = shell(project, "\n".join(commands), server)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for block in fenced("text"):
        for line in block.splitlines():
            assert line in out.splitlines(), f"{line!r} not printed:\n{out}"
    assert (project / "cassettes" / "support" / "health-check.tape").is_file()
    assert (project / "support_agent.py").read_text() == (EXAMPLE / "support_agent.py").read_text()
    assert (project / "report.html").read_text().startswith("<!DOCTYPE html>")
    recorded = server.requests[-1]
    assert recorded["messages"][-1]["content"] == "Health check: reply with the single word PONG."

    steps = yaml.safe_load((project / WORKFLOW).read_text())["jobs"]["replay"]["steps"]
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[:2] == ["pip install evaltape openai", "evaltape replay"]
    asked = len(server.requests)
    ci = shell(project, "\n".join(runs), server)
    assert ci.returncode == 0, ci.stdout + ci.stderr
    assert "OK: 1 attempt replayed, harness unchanged" in ci.stdout
    assert len(server.requests) == asked  # the replay called no model
