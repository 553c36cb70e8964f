"""A small user project for CI tests: one harness module, a suite, an evaltape.toml.

``harness.py`` asks the model once and returns the reply; a test edits it the
way a person edits a harness (``plant``) and replays the recorded tapes.
``evaltape(...)`` runs the real command line in a subprocess, with no API
keys from the environment and nothing from this repository on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HARNESS = '''"""The harness under test: one chat completion, its reply returned."""

from evaltape.scoring import Task

SYSTEM = "You are a test agent. Answer briefly."


def ask(task: Task, system: str) -> dict:
    body = {
        "model": task.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": task.prompt},
        ],
    }
    response = task.client.post(task.base_url.rstrip("/") + "/chat/completions", json=body)
    response.raise_for_status()
    return response.json()


def run(task: Task) -> str:
    system = SYSTEM
    # edits
    data = ask(task, system)
    return str(data["choices"][0]["message"]["content"])
'''
"""The harness as recorded."""

MODEL = "fake-1"
"""The model every recording names."""


def case_line(case_id: str, prompt: str) -> str:
    """One suite line: a case the fake server answers, at most 3 turns."""
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "harness",
            "whyModelBacked": "the model writes the reply",
            "expectMaxTurns": 3,
        }
    )


def make_project(root: Path, case_ids: list[str], base_url: str) -> Path:
    """The project under ``root``: ``harness.py``, ``evals/basic.jsonl``, ``evaltape.toml``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "harness.py").write_text(HARNESS)
    (root / "evals").mkdir(exist_ok=True)
    lines = [case_line(c, f"say {c}") for c in case_ids]
    (root / "evals" / "basic.jsonl").write_text("\n".join(lines) + "\n")
    (root / "evaltape.toml").write_text(
        'suites = "evals"\ncassettes = "cassettes"\nresults = ".evaltape/results"\n'
        f'agent = "harness:run"\nbase_url = "{base_url}"\n'
    )
    return root


def plant(project: Path, intact: str, edited: str) -> None:
    """Replace the one occurrence of ``intact`` in ``harness.py`` by ``edited``."""
    path = project / "harness.py"
    source = path.read_text()
    assert source.count(intact) == 1, f"{intact!r} should occur once in {path}"
    path.write_text(source.replace(intact, edited))


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without API keys, CI variables or a PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_", "GITHUB_", "GIT_"))
        and k != "PYTHONPATH"
    }
    return env | {"PYTHONDONTWRITEBYTECODE": "1"} | (extra or {})


def evaltape(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``evaltape ARGS`` run in ``project``."""
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
