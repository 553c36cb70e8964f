"""``evaltape bisect`` on a throwaway git repository, replay as the oracle.

The test builds a small project (a harness, one case), records the case live
against the chat server on 127.0.0.1 and commits the passing tape: GOOD.
Ten commits follow.  Five commits before BAD the harness reads a reply field
that does not exist (the planted bug: the model still answers as recorded,
the attempt now fails).  Before it, one commit edits only the system prompt
and a later one reverts the edit: at those commits the recording is stale,
replay cannot tell, and git bisect must skip them.  Bisect names the
planted commit, shows its diff summary, and leaves the repository as found.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from harness_project import MODEL, evaltape, make_project, plant

pytestmark = pytest.mark.slow

PROMPT = '"You are a test agent. Answer briefly."'
BUG = ('["message"]["content"]', '["message"]["text"]')


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def note(repo: Path, line: str) -> None:
    with (repo / "NOTES.md").open("a") as out:
        out.write(line + "\n")


@pytest.fixture
def history(tmp_path: Path) -> dict[str, str]:
    """The repository's commits by name; ``repo`` is its folder."""
    repo = tmp_path / "repo"
    with ChatServer() as server:
        make_project(repo, ["hello"], server.url)
        (repo / ".gitignore").write_text(".evaltape/\n__pycache__/\n")
        git(repo, "init", "-q", "-b", "main")
        commits = {"start": commit(repo, "harness and one case")}
        live = evaltape(repo, "live", "--update-cassettes", "-m", MODEL)
        assert live.returncode == 0, live.stdout + live.stderr
    commits["good"] = commit(repo, "record hello")
    note(repo, "# notes")
    commit(repo, "notes")
    plant(repo, PROMPT, '"You are a test agent. Answer briefly and politely."')
    commits["prompt"] = commit(repo, "a politer system prompt")
    note(repo, "while the prompt was polite")
    commits["still stale"] = commit(repo, "notes, prompt still edited")
    plant(repo, '"You are a test agent. Answer briefly and politely."', PROMPT)
    commit(repo, "back to the old system prompt")
    plant(repo, BUG[0], BUG[1])
    commits["bug"] = commit(repo, "read the reply's text field")
    for n in range(5):
        note(repo, f"after the bug {n}")
        commit(repo, f"notes {n}")
    commits["bad"] = git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD~5") == commits["bug"]
    return commits | {"repo": str(repo)}


def test_bisect_finds_the_planted_bug_and_skips_the_stale_prompt_commits(
    history: dict[str, str],
) -> None:
    repo = Path(history["repo"])
    result = evaltape(repo, "bisect", history["good"], "HEAD", "--cases", "hello")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout.splitlines()
    assert f"first bad commit: {history['bug']}" in out
    assert f"  {history['bug'][:7]} read the reply's text field" in out
    assert any("harness.py | 2 +-" in line for line in out), result.stdout
    steps = {line.split()[0]: line.split()[1] for line in out if "  " in line[:14]}
    skipped = [c for c, answer in steps.items() if answer == "skip"]
    assert skipped and all(
        c in (history["prompt"][:12], history["still stale"][:12]) for c in skipped
    ), result.stdout
    stale = next(line for line in out if line.startswith(skipped[0]))
    assert "STALE" in stale
    assert steps.get(history["bug"][:12]) == "bad", result.stdout
    assert git(repo, "rev-parse", "HEAD") == history["bad"]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(repo, "status", "--porcelain") == ""


def test_bisect_refuses_uncommitted_changes_and_unknown_commits(history: dict[str, str]) -> None:
    repo = Path(history["repo"])
    unknown = evaltape(repo, "bisect", "no-such-tag")
    assert unknown.returncode == 2
    assert "evaltape: error: GOOD 'no-such-tag' is not a commit of" in unknown.stderr
    (repo / "harness.py").write_text((repo / "harness.py").read_text() + "\n# wip\n")
    dirty = evaltape(repo, "bisect", history["good"])
    assert dirty.returncode == 2
    assert "uncommitted changes" in dirty.stderr and "Traceback" not in dirty.stderr
