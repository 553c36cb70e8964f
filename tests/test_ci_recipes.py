"""The CI recipes in docs/examples/ci/ run: their evaltape steps, locally, as CI would.

Each workflow file is parsed (PyYAML) and every ``evaltape ...`` command of
its jobs runs in a shell with the job's environment, in this order:

- the per-push replay job against a copy of the shipped cassettes and suites,
  offline with no API key: exit 0, and the JUnit and JSON files it uploads
  exist and validate;
- the release job twice against a small project whose chat model is a
  server on 127.0.0.1 and whose system prompt was edited since recording:
  ``rerecord`` records the stale attempts again, then ``live --gate`` runs;
  the second time the history restored from the cache gives the gate the
  first release's run as its baseline.

``evaltape report`` (the HTML report step) runs only when this evaltape has
that command (``evaltape report --help`` succeeds); otherwise it is skipped.
docs/ci.md shows the two files verbatim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema
import yaml
from agents.chat_server import ChatServer
from harness_project import clean_env, evaltape, make_project, plant

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples" / "ci"
SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit-10.xsd")
BIN = str(Path(sys.executable).parent)
KEY = "sk-test-0123456789abcdefghijklmnop"


def github_jobs() -> dict[str, tuple[dict[str, str], list[str], list[str]]]:
    """Each job: its environment, its evaltape commands, the paths it uploads."""
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    jobs = {}
    for name, job in workflow["jobs"].items():
        env = {k: str(v) for k, v in job.get("env", {}).items()}
        commands = [s["run"].strip() for s in job["steps"] if "evaltape" in s.get("run", "")]
        uploads = [
            line.strip()
            for s in job["steps"]
            if s.get("uses", "").startswith("actions/upload-artifact")
            for line in s["with"]["path"].splitlines()
            if line.strip()
        ]
        jobs[name] = (env, commands, uploads)
    return jobs


def gitlab_jobs() -> dict[str, tuple[dict[str, str], list[str], list[str]]]:
    pipeline = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    jobs = {}
    for name, job in pipeline.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        env = {k: str(v) for k, v in job.get("variables", {}).items()}
        lines = [*job["script"], *job.get("after_script", [])]
        commands = [line for line in lines if "evaltape" in line]
        jobs[name] = (env, commands, list(job["artifacts"]["paths"]))
    return jobs


def has_report_command() -> bool:
    return evaltape(ROOT, "report", "--help").returncode == 0


def run_job(commands: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """Run each command as CI's shell would; returns the commands skipped."""
    skipped = []
    for command in commands:
        assert command.startswith("evaltape "), command
        if command.startswith("evaltape report") and not has_report_command():
            skipped.append(command)
            continue
        done = subprocess.run(
            ["bash", "-eu", "-c", command],
            cwd=cwd,
            env=clean_env(env) | {"PATH": BIN + os.pathsep + os.environ["PATH"]},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return skipped


def assert_uploads(cwd: Path, uploads: list[str], skipped: list[str]) -> None:
    for path in uploads:
        if path == "report.html" and skipped:
            continue
        assert (cwd / path).exists(), f"{path} is uploaded but was not written"
        if path.endswith(".xml"):
            SCHEMA.validate(str(cwd / path))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this repository's suites, cassettes and settings: what a push replays."""
    root = tmp_path_factory.mktemp("shipped")
    for folder in ("evals", "cassettes"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize("recipe", ["github", "gitlab"])
def test_the_replay_job_passes_offline_on_the_shipped_cassettes(recipe: str, shipped: Path) -> None:
    jobs = github_jobs() if recipe == "github" else gitlab_jobs()
    env, commands, uploads = jobs["replay"]
    assert commands == [
        "evaltape lint cassettes/",
        "evaltape replay --junit evaltape-replay.xml --json evaltape-replay.json",
    ]
    assert "OPENAI_API_KEY" not in env
    skipped = run_job(commands, shipped, env)
    assert_uploads(shipped, uploads, skipped)
    document = json.loads((shipped / "evaltape-replay.json").read_text())
    assert document["exit_code"] == 0 and document["counts"]["passed"] == len(document["cases"])


@pytest.mark.parametrize("recipe", ["github", "gitlab"])
def test_the_release_job_rerecords_stale_cassettes_and_gates_with_the_cached_history(
    recipe: str, tmp_path: Path
) -> None:
    jobs = github_jobs() if recipe == "github" else gitlab_jobs()
    env, commands, uploads = jobs["release"]
    env = env | {"OPENAI_API_KEY": KEY}
    model = env["MODEL"]
    with ChatServer() as server:
        project = make_project(tmp_path / "project", ["hello", "bye"], server.url)
        recorded = evaltape(project, "live", "--update-cassettes", "-m", model)
        assert recorded.returncode == 0, recorded.stderr
        shutil.rmtree(project / ".evaltape")  # a fresh CI machine: no history yet
        plant(project, '"You are a test agent. Answer briefly."', '"You are a test agent."')
        assert evaltape(project, "replay").returncode == 3  # stale: the prompt changed

        skipped = run_job(commands, project, env)
        assert_uploads(project, uploads, skipped)
        first = json.loads((project / "evaltape-gate.json").read_text())
        # the re-recorded run has 1 trial per case: never the baseline of a 3-trial gate, and
        # not run zero either: the gate says what is missing
        assert [g["state"] for g in first["gates"]] == ["no baseline"], first["gates"]
        assert any(
            n.startswith(f"no baseline: no earlier run of {model} ran 3 trial(s) per case")
            for n in first["gates"][0]["notes"]
        )
        assert evaltape(project, "replay").returncode == 0  # the stale recording was redone

        run_job(commands, project, env)  # the next release, history restored from the cache
    second = json.loads((project / "evaltape-gate.json").read_text())
    (gate,) = second["gates"]
    assert gate["state"] == "open" and first["run_id"] in gate["against"]
    if skipped:
        assert skipped == ["evaltape report latest -o report.html"]


def test_docs_ci_shows_the_recipes_verbatim() -> None:
    text = (ROOT / "docs" / "ci.md").read_text()
    for name in ("github-actions.yml", "gitlab-ci.yml"):
        body = (EXAMPLES / name).read_text()
        assert f"```yaml\n{body}```" in text, f"docs/ci.md does not show {name} as it is"
