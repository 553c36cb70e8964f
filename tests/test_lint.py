"""``evaltape lint`` finds planted secrets, passes clean tapes, refuses corrupt ones."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from evaltape.recorder import (
    Chunk,
    Exchange,
    FileEntry,
    HarnessEvent,
    Request,
    Response,
    SessionStarted,
    WorkspaceSnapshot,
    open_session,
)
from evaltape.recorder.redact import default_redactor
from evaltape.recorder.script import parse_script, write_script_tape

pytestmark = pytest.mark.slow

OPENAI_KEY = "sk-proj-Ab3dEf9hIj2kLmN0pQrStUvWxYz12345_-abcdefG7"
AWS_KEY = "AKIAIOSFODNN7EXAMPL3"
GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xoxb-123456789012-abcdefghijkl"
GOOGLE = "AIzaSyA-1234567890abcdefghijklmnopqrstu"


def _lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "lint", *map(str, paths)],
        capture_output=True,
        text=True,
    )


def _leaky_exchange() -> Exchange:
    event = f'data: {{"choices":[{{"delta":{{"content":"{OPENAI_KEY}"}}}}]}}\n\n'.encode()
    cut = event.index(b"sk-") + 6
    return Exchange(
        at=0.5,
        duration=1.0,
        request=Request(
            method="POST",
            url=f"https://example.test/v1/models?key={GOOGLE}",
            headers=(("authorization", "Bearer abc"), ("content-type", "application/json")),
            body=b'{"model":"m"}',
        ),
        response=Response(
            status=200,
            headers=(("content-type", "text/event-stream"),),
            chunks=(
                Chunk(at=0.1, data=b"data: {}\n\n"),
                Chunk(at=0.2, data=event[:cut]),
                Chunk(at=0.3, data=event[cut:]),
            ),
            streamed=True,
        ),
    )


def _gzip_exchange() -> Exchange:
    return Exchange(
        at=2.0,
        duration=0.1,
        request=Request(method="GET", url="https://example.test/v1/files"),
        response=Response(
            status=200,
            headers=(("content-encoding", "gzip"),),
            chunks=(Chunk(at=0.0, data=gzip.compress(f'{{"t":"{GITHUB}"}}'.encode())),),
        ),
    )


def _write_leaky(path: Path) -> None:
    header = SessionStarted(
        session_id="00112233445566aa", started_at=1.0, metadata=(("note", AWS_KEY),)
    )
    with open_session(path, header, clock=lambda: 9.0) as tape:
        tape.append(_leaky_exchange())
        tape.append(_gzip_exchange())
        tape.append(HarnessEvent(at=3.0, name="tool", fields=(("stdout", f"x {SLACK}"),)))
        tape.append(
            WorkspaceSnapshot(at=4.0, files=(FileEntry(path=".env", data=b"K=" + GITHUB.encode()),))
        )


def _write_clean(path: Path) -> None:
    header = SessionStarted(session_id="00112233445566bb", started_at=1.0)
    redactor = default_redactor()
    with open_session(path, header, clock=lambda: 9.0) as tape:
        tape.append(redactor.redact_exchange(_leaky_exchange()))
        tape.append(redactor.redact_exchange(_gzip_exchange()))


def test_lint_reports_every_planted_secret_without_printing_it(tmp_path: Path) -> None:
    path = tmp_path / "leaky.tape"
    _write_leaky(path)
    run = _lint(path)
    assert run.returncode == 1, run.stderr
    lines = run.stdout.splitlines()
    prefix = f"{path}: session 00112233445566aa event"
    assert all(line.startswith(prefix) for line in lines)
    expected = [
        "event 0: AWS access key id at metadata 'note'",
        "event 1: Google API key at request url",
        "event 1: authorization header at request header authorization",
        "event 1: OpenAI API key at response body chunk 1",
        "event 2: GitHub token at response body (decoded gzip)",
        "event 3: Slack token at harness event 'tool' field 'stdout'",
        "event 4: GitHub token at workspace file .env",
    ]
    for fragment in expected:
        assert any(fragment in line for line in lines), (fragment, lines)
    for secret in (OPENAI_KEY, AWS_KEY, GITHUB, SLACK, GOOGLE, "Bearer abc"):
        assert secret not in run.stdout + run.stderr
    assert "sk-p****" in run.stdout


def test_lint_passes_clean_tapes_found_in_directories(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    _write_clean(tmp_path / "a" / "clean.tape")
    script = parse_script({"responses": [{"text": "hello"}]}, "s.json")
    write_script_tape(script, tmp_path / "a" / "b" / "scripted.tape")
    (tmp_path / "a" / "notes.txt").write_text(OPENAI_KEY)
    run = _lint(tmp_path / "a")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "evaltape lint: no secrets in 2 tapes, 2 sessions, 7 events"


def test_lint_exits_2_on_corrupt_or_foreign_files(tmp_path: Path) -> None:
    good = tmp_path / "good.tape"
    _write_clean(good)
    corrupt = tmp_path / "corrupt.tape"
    data = bytearray(good.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    run = _lint(corrupt)
    assert run.returncode == 2
    assert "corrupt.tape: byte" in run.stderr
    foreign = tmp_path / "foreign.tape"
    foreign.write_text("hello")
    run = _lint(good, foreign)
    assert run.returncode == 2
    assert "foreign.tape: not an evaltape tape" in run.stderr
    assert "Traceback" not in run.stderr
    missing = _lint(tmp_path / "missing.tape")
    assert missing.returncode == 2 and "no such tape file" in missing.stderr


def test_lint_secret_and_clean_together_exit_1(tmp_path: Path) -> None:
    _write_clean(tmp_path / "clean.tape")
    _write_leaky(tmp_path / "leaky.tape")
    run = _lint(tmp_path)
    assert run.returncode == 1
    assert "clean.tape" not in run.stdout
    assert "secrets found (2 tapes" in run.stderr
