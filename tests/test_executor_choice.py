"""Choosing where attempts run: ``--executor threads|ray`` and its refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent

WITHOUT_RAY = (
    "import sys; sys.modules['ray'] = None\n"  # `import ray` fails as if not installed
    "from evaltape.scoring.cli.main import cli\n"
    "cli(sys.argv[1:])\n"
)


def _evaltape(*args: str, without_ray: bool = False) -> subprocess.CompletedProcess[str]:
    head = ["-c", WITHOUT_RAY] if without_ray else ["-m", "evaltape.scoring.cli"]
    return subprocess.run(
        [sys.executable, *head, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_executor_ray_without_ray_installed_says_what_to_install_in_one_line(
    tmp_path: Path,
) -> None:
    for command in ("replay", "rescore"):
        done = _evaltape(command, "--executor", "ray", "--results", str(tmp_path), without_ray=True)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            "evaltape: error: --executor ray needs 'pip install evaltape[ray]'"
        ]
    assert not (tmp_path / "runs").exists()  # refused before a run record was started


def test_an_unknown_executor_and_a_ray_address_without_ray_are_refused(tmp_path: Path) -> None:
    done = _evaltape("replay", "--executor", "dask", "--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        'evaltape: error: executor: "dask" is not one of auto, threads, ray'
    )
    done = _evaltape("replay", "--ray-address", "127.0.0.1:1", "--results", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "evaltape: error: --ray-address needs --executor ray"
    )


def test_a_working_dir_over_the_limit_is_refused_naming_its_largest_parts(tmp_path: Path) -> None:
    from evaltape.scoring.run.executors._ray_connect import (
        MAX_WORKING_DIR,
        RayUnavailable,
        working_dir_of,
    )

    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "big.bin", "wb") as f:
        f.truncate(MAX_WORKING_DIR + 1)  # sparse: no disk used
    (tmp_path / "agent.py").write_text("def run(task): ...\n")
    (tmp_path / ".venv").mkdir()
    with open(tmp_path / ".venv" / "huge.bin", "wb") as f:
        f.truncate(4 * MAX_WORKING_DIR)  # never shipped, never counted
    with pytest.raises(RayUnavailable) as caught:
        working_dir_of(tmp_path)
    assert str(caught.value).startswith(
        f"--ray-working-dir {tmp_path}: 100.0 MiB is over the 100 MiB that is shipped to workers "
        "(largest: data 100 MiB, agent.py 0 MiB)"
    )
    (tmp_path / "data" / "big.bin").unlink()
    shipped = working_dir_of(tmp_path, leave_out=(tmp_path / "results",))
    assert shipped["working_dir"] == str(tmp_path)
    assert ".venv" in shipped["excludes"] and "/results" in shipped["excludes"]
