"""``evaltape compare`` on the project's own recorded runs (evals/runs/): a real pair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
RUNS = REPO / "evals" / "runs"


def compare(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "compare", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_regression_report_of_two_real_recorded_runs() -> None:
    done = compare(
        str(RUNS / "smollm2-auto-trajectory.json"),
        str(RUNS / "smollm2-forced.json"),
        "--suite",
        "trajectory",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # evidence first, then pass rates, then per-case moves
    order = [lines.index("Statistical evidence:"), lines.index("Pass rates:")]
    assert order == sorted(order)
    assert "14 common cases tested" in lines[0]
    # 3 cases moved, all the same way: the exact sign-flip p is 1/2^3
    assert "3 of 14 cases moved; p(current worse) = 0.1250" in done.stdout
    assert "(not significant)" in done.stdout
    assert "9/42 trials passed" in done.stdout and "1/42 trials passed" in done.stdout
    regressed = [line.split()[1] for line in lines if line.strip().startswith("regressed")]
    assert regressed == [
        "trajectory/answer-greeting-without-tools:",
        "trajectory/answer-http-status-without-tools:",
        "trajectory/answer-python-builtin-without-tools:",
    ]
    assert "never decides" in done.stdout


def test_a_run_with_several_models_needs_model_and_bad_specs_are_one_line(tmp_path: Path) -> None:
    missing = compare(str(tmp_path / "nope.json"), str(RUNS / "smollm2-forced.json"))
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1 and "no such run record" in missing.stderr
    wrong = compare(
        str(RUNS / "smollm2-forced.json"), str(RUNS / "smollm2-forced.json"), "--model", "gpt-x"
    )
    assert wrong.returncode == 1 and "no attempts with model gpt-x" in wrong.stderr
    assert "Traceback" not in wrong.stderr + missing.stderr
