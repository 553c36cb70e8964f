"""evaltape installs beneath one package name and leaves generic names to the user.

The wheel is built from this checkout and installed into a fresh venv with no
network: the venv sees the dev environment's dependencies through a ``.pth``
line, and evaltape only through its own wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {"evaltape"}
    for top in ("recorder", "replay", "scoring"):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            if "_top" not in rel.parts:
                found.add("evaltape." + ".".join(rel.parts))
    assert listed == found


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with evaltape installed from a wheel of this checkout."""
    work = tmp_path_factory.mktemp("pkg")
    # Built from a copy, so the build leaves nothing (build/, *.egg-info) in the checkout.
    source = work / "src"
    skip = shutil.ignore_patterns(".*venv", ".git", "build", "*.egg-info", "__*__", ".*_cache")
    shutil.copytree(ROOT, source, symlinks=True, ignore=skip)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(work / "dist"), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    wheel = next((work / "dist").glob("evaltape-*.whl"))
    env_dir = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # Dependencies (and pytest) come from this environment, appended after the venv's own.
    Path(site, "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return env_dir


@pytest.mark.slow
def test_nothing_generic_is_installed_at_the_top_level(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    for name in ("recorder", "replay", "scoring"):
        proc = subprocess.run(
            [python, "-c", f"import {name}"], capture_output=True, text=True, cwd=venv
        )
        assert proc.returncode == 1
        assert f"No module named '{name}'" in proc.stderr
    ok = subprocess.run(
        [python, "-c", "import evaltape, evaltape.scoring, evaltape.replay; print(evaltape.fold)"],
        capture_output=True, text=True, cwd=venv,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert str(venv) in subprocess.run(
        [python, "-c", "import evaltape.recorder as r; print(r.__file__)"],
        capture_output=True, text=True, cwd=venv, check=True,
    ).stdout  # fmt: skip


@pytest.mark.slow
def test_a_project_with_its_own_replay_and_scoring_modules_runs_pytest(
    venv: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "recorder").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "replay.py").write_text("OWNER = 'user replay'\n")
    (project / "scoring.py").write_text("OWNER = 'user scoring'\n")
    (project / "recorder" / "__init__.py").write_text("OWNER = 'user recorder'\n")
    (project / "tests" / "test_mine.py").write_text(
        textwrap.dedent(
            """
            import recorder
            import replay
            import scoring


            def test_my_modules_are_mine():
                assert replay.OWNER == "user replay"
                assert scoring.OWNER == "user scoring"
                assert recorder.OWNER == "user recorder"


            def test_the_plugin_fixture_is_there(evaltape_tape):
                assert evaltape_tape.mode.value == "once"
                assert evaltape_tape.path.name == "test_the_plugin_fixture_is_there.tape"
            """
        )
    )
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-v",
         "--evaltape-record-mode=once"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert "evaltape: record mode once" in proc.stdout  # the plugin reports itself
