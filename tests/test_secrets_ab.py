"""Secrets an A/B run is handed or shown stay off its console and every file it writes.

Planted: an OpenAI key and a shapeless value (``hunter2-...``) as variant
environment values, which the agent puts in its requests, a harness event,
a workspace file and its reply; and, from the fake model, tool calls whose
arguments (a JSON string inside the JSON body) hold a PEM private key and a
``client_secret`` one level deeper, answered whole and streamed, then sent
back in the next request.  Then stdout, stderr, every file under the results
folder (tapes decoded) and the HTML report are searched for each secret's
random part: no hit.  The usage counters survive, and ``evaltape lint``
finds the same secrets in an exchange recorded without redaction.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import click
import pytest
from fakeapi import FakeAPI, Reply, ToolUse
from test_secrets_everywhere import _files, _tape_text

from evaltape.recorder import Chunk, Exchange, Request, Response, TapeReader, fold
from evaltape.recorder.redact import default_redactor
from evaltape.scoring.outputs.console._terminal import fail, masked_console
from evaltape.scoring.verdicts._ab import parse_variant

REPO = Path(__file__).parent.parent


def _random(n: int) -> str:
    while True:
        text = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))
        if any(c.isdigit() for c in text) and any(c.isalpha() for c in text):
            return text


def _pem(body: str) -> str:
    lines = [body[i : i + 32] for i in range(0, len(body), 32)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


pytestmark = pytest.mark.slow  # an `evaltape ab` subprocess against a local fake API

AGENT = """
import json

from evaltape.scoring import Task


def run(task: Task) -> str:
    token = task.environ.get("AB_SECRET_TOKEN", "")
    key = task.environ.get("OPENAI_API_KEY", "")
    url = task.base_url.rstrip("/") + "/chat/completions"
    messages = [{"role": "user", "content": "token " + token + " key " + key}]
    first = task.client.post(url, json={"model": task.model, "messages": messages}).json()
    message = first["choices"][0]["message"]
    messages += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"],
                           "content": json.dumps({"saved": True, "token": token})}]
    body = {"model": task.model, "messages": messages, "stream": True,
            "stream_options": {"include_usage": True}}
    with task.client.stream("POST", url, json=body) as streamed:
        streamed.read()
    task.log("env", token=token)
    (task.workspace / "notes.txt").write_text("token " + token + " key " + key + "\\n")
    return "done with " + token
"""


def test_no_variant_value_or_nested_secret_reaches_console_or_any_file(
    tmp_path: Path, api: FakeAPI
) -> None:
    pem_body, client_secret = _random(96), "cs-" + _random(7)
    tokens = ("hunter2-" + _random(8), "hunter2-" + _random(8))
    openai_key = "sk-proj-" + _random(40)
    arguments = {"key": _pem(pem_body), "cfg": {"auth": {"client_secret": client_secret}}}
    api.script(*(Reply(text="ok", tool_calls=(ToolUse("save", arguments),)),) * 4)

    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    case = {
        "id": "plant",
        "prompt": "plant the secrets",
        "failureCategory": "runner",
        "whyModelBacked": "plants secrets in an A/B",
        "expectMaxTurns": 3,
    }
    (project / "evals" / "ab.jsonl").write_text(json.dumps(case) + "\n")
    (project / "leak_agent.py").write_text(AGENT)
    (project / "evaltape.toml").write_text(
        f'agent = "leak_agent:run"\nbase_url = "{api.openai_url}"\nhang_limit = 20\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env = {k: v for k, v in env.items() if not k.startswith("AB_")}
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO)])

    def evaltape(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    before = _files(project)
    done = evaltape(
        "ab",
        "--baseline",
        f"env:AB_SECRET_TOKEN={tokens[0]}",
        "--candidate",
        f"env:AB_SECRET_TOKEN={tokens[1]},OPENAI_API_KEY={openai_key}",
        "-m",
        "fake-1",
        "--trials",
        "1",
        "--source",
        "simulated",
        "--json",
        str(tmp_path / "outcome.json"),
    )
    assert done.returncode == 0, done.stderr
    (folder,) = (project / ".evaltape" / "results" / "ab").iterdir()
    page = tmp_path / "report.html"
    report = evaltape("report", folder.name, "-o", str(page))
    assert report.returncode == 0, report.stderr

    written = {f: d for f, d in _files(project).items() if before.get(f) != d}
    tapes = [f for f in written if f.suffix == ".tape"]
    assert len(tapes) == 2 and any(f.name == "baseline.json" for f in written)
    texts = {"ab stdout": done.stdout, "ab stderr": done.stderr}
    texts |= {"report stdout": report.stdout, "report stderr": report.stderr}
    texts |= {str(f): _tape_text(f) for f in tapes}
    texts |= {str(f): d.decode("utf-8", "replace") for f, d in written.items() if f not in tapes}
    texts |= {str(p): p.read_text() for p in (page, tmp_path / "outcome.json")}
    needles = {
        "baseline token": tokens[0],
        "candidate token": tokens[1],
        "openai key": openai_key[8:],
        "PEM body": pem_body[:32],
        "PEM body, last line": pem_body[-32:],
        "nested client_secret": client_secret[3:],
    }
    hits = [f"{what} in {where}" for where, text in texts.items() for what, n in needles.items()
            if n in text]  # fmt: skip
    assert hits == []
    # The run did see them, the variants are named, and the usage counters survived.
    assert "AB_SECRET_TOKEN=[REDACTED]" in done.stdout
    assert "OPENAI_API_KEY=[REDACTED]" in done.stderr
    tape_text = "\n".join(texts[str(f)] for f in tapes)
    assert tape_text.count("REDACTED") >= 10
    for tape in tapes:
        (session,) = (fold(s.events) for s in TapeReader(tape).sessions())
        assert session.usage.input_tokens > 0 and session.usage.output_tokens > 0
        assert len(session.turns) == 2


def test_lint_finds_what_the_redactor_masks_in_tool_arguments() -> None:
    pem_body = _random(64)
    arguments = json.dumps({"key": _pem(pem_body), "cfg": {"client_secret": "hunter2-x"}})
    request = json.dumps(
        {
            "messages": [
                {"role": "assistant", "tool_calls": [{"function": {"arguments": arguments}}]}
            ]
        }
    )
    response = json.dumps({"input": json.dumps({"arguments": arguments})})  # one level deeper
    exchange = Exchange(
        at=0.0,
        duration=0.0,
        request=Request(method="POST", url="http://x/v1/chat/completions", body=request.encode()),
        response=Response(status=200, chunks=(Chunk(at=0.0, data=response.encode()),)),
    )
    found = default_redactor().scan_event(exchange)
    kinds = sorted((hit.where, hit.kind) for hit in found)
    assert kinds == [
        ("request body", "private key (PEM)"),
        ("request body", "secret-named JSON value"),
        ("response body", "private key (PEM)"),
        ("response body", "secret-named JSON value"),
    ]
    redacted = default_redactor().redact_event(exchange)
    assert isinstance(redacted, Exchange) and redacted.response is not None
    bodies = redacted.request.body + redacted.response.chunks[0].data
    for line in (pem_body[:32], pem_body[32:], b"hunter2-x"):
        assert (line if isinstance(line, bytes) else line.encode()) not in bodies
    assert default_redactor().scan_event(redacted) == ()


def test_the_console_masks_given_values_in_every_line_error_lines_included(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit), masked_console(("hunter2-value",)):
        click.echo("note hunter2-value")
        click.echo("warning: hunter2-value", err=True)
        fail("refused hunter2-value")
    out, err = capsys.readouterr()
    assert "hunter2" not in out + err
    assert out == "note REDACTED*****\n"
    assert err.splitlines() == ["warning: REDACTED*****", "evaltape: error: refused REDACTED*****"]
    assert parse_variant("candidate", "env:AB_FLAG=1,AB_MODE=hunter2-value").shown == (
        "env:AB_FLAG=1,AB_MODE=[REDACTED]"
    )
