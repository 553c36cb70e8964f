"""The project's own suites (evals/*.jsonl) load, validate and are honest.

Honest means: no coding case passes before the agent has done the work (its
``verify`` fails on the fixture as shipped), every coding case can pass (a
hand-written fix makes ``verify`` exit 0), fixtures use nothing outside the
standard library, and every tool a case names is one the reference agent has.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaltape.scoring import Case, CaseKind, load_suites

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals.agent import TOOL_NAMES  # noqa: E402

SUITES = load_suites([ROOT / "evals"], rubrics_dir=ROOT / "evals" / "rubrics")
CASES = [case for suite in SUITES for case in suite.cases]
VERIFIED = [case for case in CASES if case.verify is not None]

# One correct solution per coding case: {case id: {path: new content}}.
SOLUTIONS: dict[str, dict[str, str]] = {
    "fix-off-by-one": {"calc.py": "def add(a, b):\n    return a + b\n"},
    "create-named-file": {"hello.txt": "hello world\n"},
    "set-config-value": {"config.py": "NAME = 'svc'\nTIMEOUT = 30\nRETRIES = 3\n"},
    "write-greet-function": {"greet.py": "def greet(name):\n    return f'Hello, {name}!'\n"},
    "fix-integer-division": {
        "stats.py": "def mean(values):\n    return sum(values) / len(values)\n"
    },
    "implement-fizzbuzz": {
        "fizz.py": (
            "def fizzbuzz(n):\n"
            "    if n % 15 == 0:\n        return 'FizzBuzz'\n"
            "    if n % 3 == 0:\n        return 'Fizz'\n"
            "    if n % 5 == 0:\n        return 'Buzz'\n"
            "    return str(n)\n"
        )
    },
    "rename-across-files": {
        "shop.py": "def total_price(prices):\n    return sum(prices)\n",
        "main.py": (
            "from shop import total_price\n\n\ndef checkout(cart):\n    return total_price(cart)\n"
        ),
    },
    "fix-bug-found-by-search": {
        "textkit/slug.py": "def slugify(s):\n    return s.lower().replace(' ', '-')\n"
    },
    "add-json-key": {"settings.json": '{"name": "svc", "port": 8080, "debug": false}\n'},
}


def _materialise(case: Case, folder: Path, changes: dict[str, str] | None = None) -> None:
    assert case.files is not None
    for rel, content in {**dict(case.files), **(changes or {})}.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def _verify(case: Case, folder: Path) -> subprocess.CompletedProcess[str]:
    # `python` in a verify command means the interpreter running the suite
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = case.verify
    assert command is not None
    return subprocess.run(
        command if isinstance(command, str) else list(command),
        shell=isinstance(command, str),
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=case.verify_timeout or 30,
    )


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    yield folder


def test_the_shipped_suites_load_with_every_kind() -> None:
    assert {suite.name for suite in SUITES} == {"trajectory", "coding", "judged"}
    assert len(CASES) >= 24
    kinds = {case.kind for case in CASES}
    assert kinds == {CaseKind.TRAJECTORY, CaseKind.CODING, CaseKind.JUDGED}
    assert all(case.failure_category.strip() and case.why_model_backed.strip() for case in CASES)
    assert any(case.expect_no_tool for case in CASES)
    assert all(
        case.rubric_path and Path(case.rubric_path).is_file() for case in CASES if case.rubric
    )


@pytest.mark.slow
def test_the_validate_command_accepts_them() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "validate", "evals"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"{len(CASES)} cases OK" in result.stdout


def test_every_tool_a_case_names_is_a_tool_of_the_reference_agent() -> None:
    named = set()
    for case in CASES:
        named.update(case.forbid_tools)
        named.update(case.expect_first_tool_in or ())
        if case.expect_tool is not None:
            named.add(case.expect_tool)
    assert named <= set(TOOL_NAMES), named - set(TOOL_NAMES)


def test_every_coding_case_has_a_solution_here() -> None:
    assert {case.id for case in VERIFIED} == set(SOLUTIONS)


@pytest.mark.parametrize("case", VERIFIED, ids=lambda c: c.id)
def test_verify_fails_on_the_fixture_as_shipped(case: Case, sandbox: Path) -> None:
    _materialise(case, sandbox)
    result = _verify(case, sandbox)
    assert result.returncode != 0, f"{case.id} passes without the agent doing anything"
    # a failing check says why in one line (an assertion message or an error)
    assert result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("case", VERIFIED, ids=lambda c: c.id)
def test_verify_passes_once_the_work_is_done(case: Case, sandbox: Path) -> None:
    _materialise(case, sandbox, SOLUTIONS[case.id])
    result = _verify(case, sandbox)
    assert result.returncode == 0, result.stderr
    for rel in case.immutable:
        assert rel not in SOLUTIONS[case.id], f"the solution of {case.id} changes {rel}"


@pytest.mark.parametrize("case", VERIFIED, ids=lambda c: c.id)
def test_fixtures_need_nothing_but_the_standard_library(case: Case) -> None:
    assert case.files is not None
    local = {Path(p).parts[0].removesuffix(".py") for p in case.files}
    local |= {Path(p).stem for p in SOLUTIONS[case.id]}
    for rel, content in case.files.items():
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(content, rel)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.partition(".")[0]
                assert top in sys.stdlib_module_names or top in local, f"{case.id}: {rel} {name}"
