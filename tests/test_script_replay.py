"""A scripted tape drives a real SDK through the replay transport, in script order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai import OpenAI

from evaltape.recorder import TapeReader
from evaltape.recorder.script import ScriptFlavor, load_script, write_script_tape
from evaltape.replay import Exhausted, replay_client


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "responses": [
                    {"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    return path


def test_scripted_replies_answer_any_request_in_order(tmp_path: Path) -> None:
    tape = tmp_path / "s.tape"
    write_script_tape(load_script(_script(tmp_path)), tape, flavor=ScriptFlavor.OPENAI_CHAT)
    (session,) = TapeReader(tape).sessions()
    client = OpenAI(
        api_key="unused",
        base_url="http://127.0.0.1:9/v1",
        http_client=replay_client(session, flavor="httpx2"),
    )
    first = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "whatever the harness says"}]
    )
    call = first.choices[0].message.tool_calls
    assert call is not None and call[0].function.name == "read"  # type: ignore[union-attr]
    second = client.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "something else entirely"}]
    )
    assert second.choices[0].message.content == "done"
    with pytest.raises(Exhausted):
        client.with_options(max_retries=0).chat.completions.create(
            model="any", messages=[{"role": "user", "content": "one too many"}]
        )
