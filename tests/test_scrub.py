"""Scrubbing: a fresh recording replays unchanged although the workspace path
and the time differ on every run."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import openai
import pytest
from fakeapi import FakeAPI, Reply, ToolUse

from evaltape.recorder import (
    Exchange,
    RecordedSession,
    Request,
    SessionStarted,
    TapeReader,
    open_session,
    recording_client,
)
from evaltape.recorder._shared import WORKSPACE_PLACEHOLDER, workspace_spellings
from evaltape.recorder.redact import Scrubber, ScrubError, ScrubRule, default_redactor
from evaltape.recorder.tape import new_session_id
from evaltape.replay import Diverged, ReplayTransport, replay_client

CHAT = "http://127.0.0.1:9/v1/chat/completions"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "where",
            "description": "Print the working folder and the time.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with FakeAPI() as server:
        yield server


def agent(client: openai.OpenAI, workspace: Path, now: str) -> list[str]:
    """Two turns: the model asks for a tool, the tool prints the folder and the time."""
    messages: list[Any] = [{"role": "user", "content": f"work in {workspace}"}]
    first = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    output = f"cwd={workspace} at {now}"
    messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    second = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    return [call.function.name, second.choices[0].message.content or ""]


def record(tmp_path: Path, api: FakeAPI, workspace: Path, scrubber: Scrubber) -> RecordedSession:
    path = tmp_path / "s.tape"
    header = SessionStarted(session_id=new_session_id(), started_at=time.time())
    with open_session(path, header) as writer:
        http = recording_client(writer, flavor="httpx2", redactor=scrubber)
        client = openai.OpenAI(base_url=api.openai_url, api_key="sk-test", http_client=http)
        agent(client, workspace, "2026-12-01T09:00:00")
    (session,) = TapeReader(path).sessions()
    return session


def test_workspace_path_and_time_replay_unchanged_in_a_new_folder(
    api: FakeAPI, tmp_path: Path
) -> None:
    rules = (ScrubRule(pattern=STAMP, replacement="<time>"),)
    first_ws = tmp_path / "ws-run-1"
    api.script(Reply(tool_calls=(ToolUse("where", {}),)), Reply(text=f"done in {first_ws}"))
    scrub = Scrubber(redactor=default_redactor(), workspace=(str(first_ws),), rules=rules)
    session = record(tmp_path, api, first_ws, scrub)
    api.stop()
    bodies = [e.request.body for e in session.events if isinstance(e, Exchange)]
    assert all(str(first_ws).encode() not in b for b in bodies)
    assert f"cwd={WORKSPACE_PLACEHOLDER} at <time>".encode() in bodies[1]

    second_ws = tmp_path / "ws-run-2"
    replay_scrub = Scrubber(redactor=default_redactor(), workspace=(str(second_ws),), rules=rules)
    tape = ReplayTransport(session, scrubber=replay_scrub)
    client = openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-x",
        http_client=replay_client(tape, flavor="httpx2"),
    )
    name, reply = agent(client, second_ws, "2026-12-02T17:30:59")
    tape.finish()
    assert not tape.tainted
    assert name == "where"
    assert reply == f"done in {second_ws}"  # the recorded path, restored to today's folder


def test_without_scrubbing_the_new_folder_diverges(api: FakeAPI, tmp_path: Path) -> None:
    first_ws = tmp_path / "ws-run-1"
    api.script(Reply(tool_calls=(ToolUse("where", {}),)), Reply(text="done"))
    plain = Scrubber(redactor=default_redactor())
    session = record(tmp_path, api, first_ws, plain)
    api.stop()
    tape = ReplayTransport(session)
    client = openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-x",
        http_client=replay_client(tape, flavor="httpx2"),
        max_retries=0,
    )
    with pytest.raises(Diverged, match=r'sent .*ws-run-2", recorded .*ws-run-1"'):
        agent(client, tmp_path / "ws-run-2", "2026-12-01T09:00:00")


def test_a_rule_that_does_not_compile_is_refused() -> None:
    with pytest.raises(ScrubError, match=r"scrub rule '\(unclosed'"):
        ScrubRule(pattern="(unclosed", replacement="x")
    with pytest.raises(ScrubError, match="invalid group reference"):
        ScrubRule(pattern="a", replacement="\\2")


def test_json_escaped_and_resolved_spellings_are_scrubbed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    scrub = Scrubber(redactor=default_redactor(), workspace=workspace_spellings(str(link)))
    escaped = str(link).replace("/", "\\/")  # how some JSON encoders write a slash
    body = json.dumps({"a": str(link), "b": str(real)})[:-1] + f', "c": "{escaped}"}}'
    out = scrub.scrub_body(body.encode()).decode()
    assert out.count(WORKSPACE_PLACEHOLDER) == 3
    assert str(tmp_path) not in out


def test_derived_forms_of_the_workspace_get_placeholders_and_come_back_in_responses(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    folder = home / "work" / "evaltape-ab_12cd"
    scrub = Scrubber(redactor=default_redactor(), workspace=(str(folder),), home=str(home))
    dashed = re.sub(r"[^A-Za-z0-9]", "-", str(folder))
    body = json.dumps(
        {
            "plain": f"{folder}/",
            "dashed": f"~/.agent/projects/{dashed}-/notes.md",
            "percent": "file%3A" + quote(str(folder), safe=""),
            "home": "cd ~/work/evaltape-ab_12cd && ls",
        }
    ).encode()
    out = json.loads(scrub.scrub_body(body))
    assert out == {
        "plain": "<workspace>/",
        "dashed": "~/.agent/projects/<workspace-dashed>-/notes.md",
        "percent": "file%3A<workspace-percent>",
        "home": "cd <workspace-home> && ls",
    }
    # A replay in another folder gets each form back in today's spelling.
    today = tmp_path / "home" / "work" / "evaltape-zz_99yy"
    again = Scrubber(redactor=default_redactor(), workspace=(str(today),), home=str(home))
    served = again.restore(json.dumps(out).encode()).decode()
    assert re.sub(r"[^A-Za-z0-9]", "-", str(today)) in served
    assert quote(str(today), safe="") in served and "~/work/evaltape-zz_99yy" in served


def test_rules_rewrite_the_recorded_request_too() -> None:
    rule = ScrubRule(pattern=r"Linux [\w.+-]+", replacement="Linux <kernel>")
    scrub = Scrubber(redactor=default_redactor(), rules=(rule,))
    recorded = Exchange(
        at=0.0,
        duration=0.1,
        request=Request(method="POST", url=CHAT, body=b'{"system": "on Linux 6.1.0-17-amd64"}'),
    )
    assert scrub.rescrub_exchange(recorded).request.body == b'{"system": "on Linux <kernel>"}'
    plain = Scrubber(redactor=default_redactor())
    assert plain.rescrub_exchange(recorded) is recorded
