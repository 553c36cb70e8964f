"""Outcome checks: the recorded workspace restored, immutable files, verify and its reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest
from endless import Endless

from evaltape.recorder import (
    Chunk,
    Event,
    Exchange,
    FileEntry,
    Request,
    Response,
    Session,
    SessionEnded,
    SessionStarted,
    Status,
    TapeReader,
    WorkspaceSnapshot,
    fold,
    open_session,
)
from evaltape.recorder.redact import default_redactor
from evaltape.scoring import Case, Score, load_suites, score_session
from evaltape.scoring.checks._outcome import informative_line, outcome_checks

CHAT = "https://api.openai.com/v1/chat/completions"
HEADER = SessionStarted(session_id="ef" * 8, started_at=1_700_000_000.0, case_id="c", model="m")
BASE: dict[str, Any] = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
CALC = "def add(a, b):\n    return a - b\n"
FIXED = b"def add(a, b):\n    return a + b\n"
CHECK = "from calc import add\nassert add(2, 3) == 5\n"
CODING: dict[str, Any] = {
    "files": {"calc.py": CALC, "check.py": CHECK},
    "verify": ["python", "check.py"],
    "immutable": ["check.py"],
}


def _case(tmp_path: Path, **fields: Any) -> Case:
    """Load one case through the real loader."""
    path = tmp_path / "suite.jsonl"
    path.write_text(json.dumps({**BASE, **fields}) + "\n", encoding="utf-8")
    (suite,) = load_suites([path], rubrics_dir=tmp_path / "rubrics")
    return suite.cases[0]


def _edit_turn(tool: str = "write") -> Exchange:
    """A chat-completions turn whose response asks for one ``tool`` call."""
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": tool, "arguments": '{"path": "calc.py"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "fix it"}]}
    return Exchange(
        at=0.0,
        duration=0.3,
        request=Request(method="POST", url=CHAT, body=json.dumps(request).encode()),
        response=Response(status=200, chunks=(Chunk(at=0.3, data=json.dumps(reply).encode()),)),
    )


def _session(
    files: dict[str, bytes] | None, *, omitted: tuple[str, ...] = (), tool: str = "write"
) -> Session:
    """A session that made one tool call and left ``files`` (None: no snapshot recorded)."""
    events: list[Event] = [HEADER, _edit_turn(tool)]
    if files is not None:
        entries = tuple(FileEntry(path=p, data=d) for p, d in sorted(files.items()))
        events.append(WorkspaceSnapshot(at=1.0, files=entries, omitted=omitted))
    events.append(SessionEnded(at=1.5, status=Status.COMPLETED))
    return fold(events)


def _fixed() -> dict[str, bytes]:
    return {"calc.py": FIXED, "check.py": CHECK.encode()}


def _names(score: Score) -> list[str]:
    return [check.name for check in score.checks]


def test_a_fixed_workspace_passes_and_rescores_from_the_tape_alone(tmp_path: Path) -> None:
    case = _case(tmp_path, expectMaxTurns=3, **CODING)
    sandbox = tmp_path / "sandbox"
    (sandbox / "pkg").mkdir(parents=True)
    for rel, text in CODING["files"].items():
        (sandbox / rel).write_text(text, encoding="utf-8")
    (sandbox / "calc.py").write_bytes(FIXED)
    (sandbox / "pkg" / "notes.txt").write_text("kept\n", encoding="utf-8")
    entries = tuple(
        FileEntry(path=p.relative_to(sandbox).as_posix(), data=p.read_bytes())
        for p in sorted(sandbox.rglob("*"))
        if p.is_file()
    )
    ticks = iter([0.5, 1.0, 1.5])
    with open_session(tmp_path / "s.tape", HEADER, clock=lambda: next(ticks)) as tape:
        tape.append(_edit_turn())
        tape.append(WorkspaceSnapshot(at=1.0, files=entries))
    shutil.rmtree(sandbox)

    (recorded,) = TapeReader(tmp_path / "s.tape").sessions()
    score = score_session(case, fold(recorded.events))
    assert score.passed, score.reason
    assert _names(score) == [
        "hang",
        "modelErrors",
        "expectMaxTurns",
        "workspace",
        "immutable",
        "verify",
    ]
    assert score.checks[3].detail == "3 files restored"
    assert score.checks[5].detail == "verify exited 0: python check.py"


def test_an_unfixed_workspace_fails_with_the_assertion_and_its_source_line(
    tmp_path: Path,
) -> None:
    case = _case(tmp_path, **CODING)
    files = {"calc.py": CALC.encode(), "check.py": CHECK.encode()}
    score = score_session(case, _session(files))
    assert score.reason == "verify exited 1: AssertionError at: assert add(2, 3) == 5"


@pytest.mark.parametrize(
    ("tampered", "reason"),
    [
        pytest.param(b"assert True\n", "check.py was modified", id="rewritten"),
        pytest.param(CHECK.encode() + b"\n", "check.py was modified", id="one-byte-added"),
        pytest.param(None, "check.py was deleted", id="deleted"),
    ],
)
def test_tampering_with_an_immutable_file_fails_before_verify_runs(
    tmp_path: Path, tampered: bytes | None, reason: str
) -> None:
    marker = tmp_path / "verify-ran"
    case = _case(
        tmp_path,
        files=CODING["files"],
        immutable=["check.py"],
        verify=["python", "-c", f"open({str(marker)!r}, 'w').close()"],
    )
    files = {"calc.py": FIXED}
    if tampered is not None:
        files["check.py"] = tampered
    score = score_session(case, _session(files))
    assert score.reason == reason
    assert _names(score)[-2:] == ["workspace", "immutable"]
    assert not marker.exists()


def test_outcome_runs_only_when_the_trajectory_passed(tmp_path: Path) -> None:
    case = _case(
        tmp_path,
        forbidTools=["bash"],
        files=CODING["files"],
        verify=["python", "-c", "raise SystemExit('RuntimeError: verify ran')"],
    )
    score = score_session(case, _session(_fixed(), tool="bash"))
    assert score.reason == "forbidden tool bash fired (turn 1)"
    assert "verify" not in _names(score)
    assert (
        score_session(case, _session(_fixed())).reason
        == "verify exited 1: RuntimeError: verify ran"
    )


def test_a_file_the_snapshot_left_out_fails_with_a_clear_reason(tmp_path: Path) -> None:
    case = _case(tmp_path, **CODING)
    score = score_session(case, _session({"check.py": CHECK.encode()}, omitted=("calc.py",)))
    assert score.reason == (
        "the workspace snapshot left out calc.py (not a regular file, or over its size"
        " limits); cannot check it offline"
    )
    assert _names(score)[-1] == "workspace"


def test_a_session_without_a_snapshot_cannot_be_checked(tmp_path: Path) -> None:
    case = _case(tmp_path, **CODING)
    score = score_session(case, _session(None))
    assert score.reason == "the session recorded no workspace snapshot; nothing to check"


def test_other_left_out_files_are_named_when_verify_fails(tmp_path: Path) -> None:
    case = _case(tmp_path, files={"a.txt": "a"}, verify="test -f big.bin")
    score = score_session(case, _session({"a.txt": b"a"}, omitted=("big.bin",)))
    assert score.reason == "verify exited 1 with no output (the snapshot left out big.bin)"


@pytest.mark.parametrize("path", ["../escape.py", "/etc/evil", "a/../../b", "a\\..\\b"])
def test_snapshot_paths_outside_the_folder_are_refused(tmp_path: Path, path: str) -> None:
    case = _case(tmp_path, files={"a.txt": "a"}, verify="true")
    score = score_session(case, _session({"a.txt": b"a", path: b"x"}))
    assert score.reason == f"the workspace snapshot has a path outside the sandbox: {path!r}"


def test_a_snapshot_that_cannot_be_laid_out_is_a_workspace_failure(tmp_path: Path) -> None:
    case = _case(tmp_path, files={"a.txt": "a"}, verify="true")
    score = score_session(case, _session({"a.txt": b"a", "b": b"file", "b/c": b"below"}))
    assert score.reason.startswith("cannot restore the workspace snapshot: ")
    assert _names(score)[-1] == "workspace"


@pytest.mark.slow
def test_verify_timeout_is_its_own_reason_and_kills_what_it_started(
    tmp_path: Path, endless: Endless
) -> None:
    command = f"{endless.command} & {endless.command}"  # one in the background, one waited for
    case = _case(tmp_path, files={}, verify=command, verifyTimeout=0.5)
    score = score_session(case, _session({}))  # waiting for either would never return
    assert score.reason == f"verify timed out after 0.5s: {command}"
    assert endless.survivors() == []


def test_the_default_verify_timeout_applies_without_verify_timeout(tmp_path: Path) -> None:
    case = _case(tmp_path, files={}, verify=["sleep", "30"])
    assert score_session(case, _session({}), verify_timeout=0.3).reason == (
        "verify timed out after 0.3s: sleep 30"
    )


@pytest.mark.slow
def test_python_is_this_interpreter_stdin_is_closed_and_env_is_minimal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALTAPE_TEST_SECRET", "leak")
    probe = textwrap.dedent(
        f"""\
        import os, sys, attrs
        assert sys.executable == {sys.executable!r}, sys.executable
        assert sys.prefix == {sys.prefix!r}, sys.prefix
        assert sys.stdin.read() == ""
        assert "EVALTAPE_TEST_SECRET" not in os.environ, "environment leaked"
        assert os.environ["PATH"]
        assert open("data/in.txt").read() == "payload"
        """
    )
    case = _case(tmp_path, files={"probe.py": probe}, verify="python3 probe.py && python probe.py")
    files = {"probe.py": probe.encode(), "data/in.txt": b"payload"}
    assert score_session(case, _session(files)).passed


def test_snapshot_file_modes_are_restored(tmp_path: Path) -> None:
    case = _case(tmp_path, files={}, verify="./run.sh")
    events: list[Event] = [
        HEADER,
        WorkspaceSnapshot(
            at=0.1, files=(FileEntry(path="run.sh", data=b"#!/bin/sh\nexit 0\n", mode=0o755),)
        ),
    ]
    assert score_session(case, fold(events)).passed


def test_a_command_that_cannot_start_is_reported(tmp_path: Path) -> None:
    case = _case(tmp_path, files={}, verify=["evaltape-no-such-command"])
    assert score_session(case, _session({})).reason == (
        "verify could not start 'evaltape-no-such-command': No such file or directory"
    )


def test_exit_codes_without_output_and_signals(tmp_path: Path) -> None:
    quiet = _case(tmp_path, files={}, verify="exit 3")
    assert score_session(quiet, _session({})).reason == "verify exited 3 with no output"
    killed = _case(tmp_path, files={}, verify=["python", "-c", "import os; os.abort()"])
    assert score_session(killed, _session({})).reason.startswith("verify killed by signal 6")


def test_cases_without_verify_or_immutable_have_no_outcome_checks(tmp_path: Path) -> None:
    case = _case(tmp_path, files={"a.txt": "a"}, expectTool="write")
    assert outcome_checks(case, _session(None)) == ()


SCRIPTS = [
    pytest.param(
        "def add(a, b):\n    return a - b\n\nassert add(2, 3) == 5\n",
        "AssertionError at: assert add(2, 3) == 5",
        id="bare-assert",
    ),
    pytest.param(
        "r = 2 - 3\nassert r == 5, f'expected 5, got {r}'\n",
        "AssertionError: expected 5, got -1",
        id="assert-message",
    ),
    pytest.param(
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(2 - 3, 5)\n\nunittest.main()\n",
        "AssertionError: -1 != 5",
        id="unittest",
    ),
    pytest.param(
        "try:\n    {}['k']\nexcept KeyError as e:\n"
        "    raise ValueError('config has no k') from e\n",
        "ValueError: config has no k",
        id="chained-exception-last-wins",
    ),
    pytest.param(
        "def f(:\n    pass\n",
        "SyntaxError: invalid syntax",
        id="syntax-error",
    ),
    pytest.param(
        "import sys\nprint('checking add')\nprint('expected 5 but got -1')\n"
        "print('done')\nprint('Python 3.11.4')\nsys.exit(1)\n",
        "expected 5 but got -1",
        id="expected-got-before-a-banner",
    ),
    pytest.param(
        "import sys\nprint('1 passed')\nprint('FAIL test_add')\nprint('summary printed')\n"
        "sys.exit(1)\n",
        "FAIL test_add",
        id="fail-line",
    ),
    pytest.param(
        "import sys\nsys.exit('Error: calc.py is missing add():')\n",
        "Error: calc.py is missing add():",
        id="error-line",
    ),
]


def _run(script: str, tmp_path: Path, name: str = "check.py") -> str:
    path = tmp_path / name
    path.write_text(script, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=30,
    )
    assert done.returncode != 0
    return done.stdout + done.stderr


@pytest.mark.parametrize(("script", "line"), SCRIPTS)
def test_informative_line_of_real_failing_scripts(tmp_path: Path, script: str, line: str) -> None:
    output = _run(script, tmp_path)
    assert informative_line(output) == line


@pytest.mark.parametrize(("script", "line"), SCRIPTS)
def test_verify_failures_carry_the_informative_line(tmp_path: Path, script: str, line: str) -> None:
    case = _case(tmp_path, files={"check.py": script}, verify=["python", "check.py"])
    score = score_session(case, _session({"check.py": script.encode()}))
    assert not score.passed
    assert score.reason.endswith(f": {line}")


@pytest.mark.slow
def test_a_failed_pytest_run_reports_its_assertion(tmp_path: Path) -> None:
    test = "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    case = _case(
        tmp_path,
        files={"test_calc.py": test},
        verify="PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider test_c*",
    )
    score = score_session(case, _session({"test_calc.py": test.encode()}))
    assert score.reason == "verify exited 1: assert -1 == 5"


def test_informative_line_prefers_messages_over_noise() -> None:
    assert informative_line("") == ""
    assert informative_line("Traceback (most recent call last):\n\nNode.js v20.1.0\n") == ""
    long = "Error: " + "x" * 500
    assert len(informative_line(long)) == 200 and informative_line(long).endswith("…")
    node_like = (
        "node:internal/modules/run_main:123\n    triggerUncaughtException(\n    ^\n\n"
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n"
        "-1 !== 5\n\n    at file:///w/check.mjs:3:8\n    at ModuleJob.run "
        "(node:internal/modules/esm/module_job:325:25) {\n  code: 'ERR_ASSERTION'\n}\n\n"
        "Node.js v20.20.2\n"
    )
    assert informative_line(node_like) == (
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: -1 !== 5"
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_failed_node_check_is_not_reported_by_its_version_banner(tmp_path: Path) -> None:
    check = "import assert from 'node:assert';\nassert.strictEqual(2 - 3, 5);\n"
    case = _case(tmp_path, files={"check.mjs": check}, verify="node check.mjs")
    score = score_session(case, _session({"check.mjs": check.encode()}))
    assert score.reason.startswith(
        "verify exited 1: AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"
    )
    assert "-1 !== 5" in score.reason


@pytest.mark.parametrize(
    ("recorded", "passed"),
    [
        (b'KEY = "REDACTED**************************"\n', True),
        (b'KEY = "REDACTED**************************"\nextra\n', False),
        (b'KEY = "sk-proj-OTHERothero0therOTHERother"\n', False),
        (b'KEY = "REDACTED*****************DATE******"\n', False),
    ],
)
def test_an_immutable_file_masked_before_recording_is_compared_outside_its_masks(
    tmp_path: Path, recorded: bytes, passed: bool
) -> None:
    original = 'KEY = "sk-proj-a1B2c3D4e5F6g7H8i9J0k1L2m3"\n'
    case = _case(tmp_path, files={"keys.py": original}, immutable=["keys.py"])
    secret_free = default_redactor().redact_event(
        WorkspaceSnapshot(at=1.0, files=(FileEntry(path="keys.py", data=original.encode()),))
    )
    assert isinstance(secret_free, WorkspaceSnapshot)
    assert secret_free.redacted == ("keys.py",)
    snapshot = attrs.evolve(secret_free, files=(FileEntry(path="keys.py", data=recorded),))
    events: list[Event] = [HEADER, _edit_turn(), snapshot]
    events.append(SessionEnded(at=1.5, status=Status.COMPLETED))
    score = score_session(case, fold(events))
    assert score.passed is passed, score.reason
    workspace = next(c for c in score.checks if c.name == "workspace")
    assert "checked on redacted content" in workspace.detail
