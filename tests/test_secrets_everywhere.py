"""Secrets planted every way we know stay off every file ``evaltape live`` writes.

Planted: a key from the environment in a harness event, in a file the agent
writes, and in the agent's exception; keys in the case's own fixture files
(``.env``, ``config.json``); and, on the wire, an AWS secret access key, a key
written with a JSON escape, a short ``sk-`` key, a password in a
``postgres://`` URL, a key split across two server-sent events, a key in a
``gzip, gzip`` body, and a PEM private key and a nested ``client_secret`` in
tool-call arguments.  Then every file the run wrote (tapes decoded, run
records, history) and its stdout/stderr are searched for each secret's
random part: no hit.  ``evaltape lint`` then finds a key planted in a run
record.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import string
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evaltape.recorder import Exchange, WorkspaceSnapshot, read_sessions
from evaltape.recorder._shared import to_plain

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
_CLI = (sys.executable, "-m", "evaltape.scoring.cli")


def _random(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``n`` random characters with at least one digit and one letter."""
    while True:
        text = "".join(secrets.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in text) and any(c.isalpha() for c in text):
            return text


class Planted:
    """Every secret of the test, with the random part the search looks for."""

    def __init__(self) -> None:
        self.env_token = _random(24)  # no known shape: only its value gives it away
        self.openai_key = "sk-proj-" + _random(40)
        self.aws_secret = _random(40, string.ascii_letters + string.digits + "/+")
        self.escaped_tail = _random(32)
        self.short_tail = _random(10)
        self.pg_password = _random(14)
        self.split_head, self.split_tail = _random(12), _random(20)
        self.gzip_key = "sk-ant-" + _random(40)
        self.fixture_aws = _random(40, string.ascii_letters + string.digits + "/+")
        self.fixture_key = "sk-" + _random(48)
        self.written_key = "ghp_" + _random(36)
        self.pem_body = _random(64)
        self.client_secret = "cs-" + _random(7)

    def needles(self) -> dict[str, str]:
        """What must never appear: each secret's random part."""
        return {
            "env token": self.env_token,
            "openai key (env)": self.openai_key[8:],
            "aws secret (wire)": self.aws_secret,
            "json-escaped key": self.escaped_tail,
            "short sk- key": self.short_tail,
            "postgres password": self.pg_password,
            "split key, first event": self.split_head,
            "split key, second event": self.split_tail,
            "gzip, gzip key": self.gzip_key[7:],
            ".env aws secret": self.fixture_aws,
            "config.json key": self.fixture_key[3:],
            "written file key": self.written_key[4:],
            "PEM in tool arguments": self.pem_body[:32],
            "PEM in tool arguments, last line": self.pem_body[32:],
            "client_secret in tool arguments": self.client_secret[3:],
        }


def _wire_bodies(p: Planted) -> dict[str, tuple[tuple[tuple[str, str], ...], bytes]]:
    sse = (
        b'data: {"choices":[{"delta":{"content":"here: sk-proj-%s"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"%s ok"}}]}\n\n'
        b"data: [DONE]\n\n" % (p.split_head.encode(), p.split_tail.encode())
    )
    doubled = gzip.compress(gzip.compress(json.dumps({"key": p.gzip_key}).encode()))
    js = (("content-type", "application/json"),)
    lines = f"{p.pem_body[:32]}\n{p.pem_body[32:]}"
    pem = f"-----BEGIN PRIVATE KEY-----\n{lines}\n-----END PRIVATE KEY-----\n"
    arguments = json.dumps({"key": pem, "cfg": {"auth": {"client_secret": p.client_secret}}})
    call = {"function": {"name": "save", "arguments": arguments}}
    tools = {"choices": [{"message": {"tool_calls": [call]}}], "usage": {"total_tokens": 9}}
    return {
        "/aws": (js, b'{"ini": "aws_secret_access_key = %s"}' % p.aws_secret.encode()),
        "/escaped": (js, b'{"key": "\\u0073k-proj-%s"}' % p.escaped_tail.encode()),
        "/short": (js, b'{"key": "use sk-%s now"}' % p.short_tail.encode()),
        "/pg": (js, b'{"dsn": "postgres://app:%s@db.local:5432/x"}' % p.pg_password.encode()),
        "/sse": ((("content-type", "text/event-stream"),), sse),
        "/gzip2": ((*js, ("content-encoding", "gzip, gzip")), doubled),
        "/tools": (js, json.dumps(tools).encode()),
    }


@pytest.fixture
def wire(request: pytest.FixtureRequest) -> Iterator[tuple[str, Planted]]:
    """A 127.0.0.1 server answering each wire shape at its path."""
    planted = Planted()
    bodies = _wire_bodies(planted)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            headers, body = bodies.get(self.path, ((), b"{}"))
            self.send_response(200)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", planted
    server.shutdown()
    server.server_close()


AGENT = """
from evaltape.scoring import Task

PATHS = ("/aws", "/escaped", "/short", "/pg", "/sse", "/gzip2", "/tools")


def run(task: Task) -> str:
    token = task.environ["SERVICE_TOKEN"]
    key = task.environ["OPENAI_API_KEY"]
    task.log("auth", token=token, header="Bearer " + key)
    for path in PATHS:
        task.client.get(task.base_url.rstrip("/") + path).read()
    (task.workspace / "notes.txt").write_text(
        "token " + token + "\\nkey " + key + "\\ngithub " + task.environ["WRITTEN_KEY"] + "\\n"
    )
    if "boom" in task.prompt:
        raise RuntimeError("upstream refused " + key + " and " + token)
    return "echo " + token
"""


def _case(case_id: str, prompt: str, p: Planted) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "plants secrets everywhere",
            "files": {
                ".env": f"AWS_SECRET_ACCESS_KEY={p.fixture_aws}\n",
                "config.json": json.dumps({"api_key": p.fixture_key}),
            },
            "immutable": ["config.json"],
        }
    )


def _files(root: Path) -> dict[Path, bytes]:
    return {f: f.read_bytes() for f in root.rglob("*") if f.is_file()}


def _tape_text(path: Path) -> str:
    """Every event of the tape as text, bodies decoded (every gzip layer undone)."""
    out = []
    for session in read_sessions(path, strict=False):
        for event in session.events:
            out.append(repr(to_plain(event)))
            if isinstance(event, Exchange) and event.response is not None:
                body = b"".join(c.data for c in event.response.chunks)
                while body[:2] == b"\x1f\x8b":
                    body = gzip.decompress(body)
                out.append(body.decode("utf-8", "replace"))
            if isinstance(event, WorkspaceSnapshot):
                out += [f.data.decode("utf-8", "replace") for f in event.files]
    return "\n".join(out)


def test_no_planted_secret_reaches_any_file_the_run_writes(
    tmp_path: Path, wire: tuple[str, Planted]
) -> None:
    url, planted = wire
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    cases = [_case("echo", "echo the token", planted), _case("boom", "boom", planted)]
    (project / "evals" / "leak.jsonl").write_text("\n".join(cases) + "\n")
    (project / "leak_agent.py").write_text(AGENT)
    (project / "evaltape.toml").write_text(
        f'agent = "leak_agent:run"\nbase_url = "{url}"\nhang_limit = 20\n'
    )
    before = _files(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env |= {
        "PYTHONPATH": os.pathsep.join([str(project), str(REPO)]),
        "OPENAI_API_KEY": planted.openai_key,
        "SERVICE_TOKEN": planted.env_token,
        "WRITTEN_KEY": planted.written_key,
    }
    live = subprocess.run(
        [*_CLI, "live", "-m", "fake-1", "--source", "simulated", "--update-cassettes"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    written = {f: d for f, d in _files(project).items() if before.get(f) != d}
    tapes = [f for f in written if f.suffix == ".tape"]
    records = [f for f in written if f.parent.name == "runs" and f.suffix == ".json"]
    assert tapes and records, (live.stdout, live.stderr)
    assert any(f.name == "history.jsonl" for f in written)
    texts = {"stdout": live.stdout, "stderr": live.stderr}
    texts |= {str(f): _tape_text(f) for f in tapes}
    texts |= {str(f): d.decode("utf-8", "replace") for f, d in written.items() if f not in tapes}
    hits = [
        f"{what} in {where}"
        for where, text in texts.items()
        for what, needle in planted.needles().items()
        if needle in text
    ]
    assert hits == []
    # The run did see them: the wire exchanges, the snapshot and the failure were recorded.
    tape_text = "\n".join(texts[str(f)] for f in tapes)
    assert tape_text.count("REDACTED") >= 12
    assert "RuntimeError: upstream refused REDACTED" in tape_text
    assert "body not recorded" not in tape_text  # gzip, gzip decoded, not dropped
    snapshots = [
        e
        for f in tapes
        for s in read_sessions(f)
        for e in s.events
        if isinstance(e, WorkspaceSnapshot)
    ]
    assert snapshots and all(
        {".env", "config.json", "notes.txt"} <= set(s.redacted) for s in snapshots
    )
    record = json.loads(records[0].read_text())
    assert "REDACTED" in json.dumps(record)

    # lint reads run records: a key planted in one is found and named.
    planted_record = records[0]
    planted_record.write_text(
        planted_record.read_text().replace('"fake-1"', '"' + planted.fixture_key + '"', 1)
    )
    lint = subprocess.run(
        [*_CLI, "lint", str(project / ".evaltape")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert f"{planted_record}:" in lint.stdout
    assert "OpenAI API key" in lint.stdout
    assert planted.fixture_key[3:] not in lint.stdout + lint.stderr
