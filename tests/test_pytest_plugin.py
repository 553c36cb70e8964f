"""The pytest plugin, run through pytester against the fake API on 127.0.0.1.

Each test writes a small test module, runs pytest on it in-process (the way
a user would, with ``--evaltape-record-mode``), and checks the outcome, the
report and the tapes on disk.  Replays run with the fake API stopped.
"""

from __future__ import annotations

import time
from pathlib import Path

# Imported here so in-process runs reuse them: pytester drops the modules an
# inner run imports, and a second copy of httpcore breaks httpx's error mapping
# (httpx imports httpcore lazily, on the first request).
import httpcore  # noqa: F401
import httpcore2  # noqa: F401
import httpx  # noqa: F401
import httpx2  # noqa: F401
import openai  # noqa: F401
import pytest
from fakeapi import FakeAPI

from evaltape.recorder import Exchange, SessionStarted, TapeReader, open_session
from evaltape.recorder.tape import new_session_id

pytest_plugins = ["pytester"]


def source(template: str, api: FakeAPI | None = None, **values: str) -> str:
    """A test module's text: ``@URL@`` is the fake API's OpenAI base URL, ``@NAME@`` a value."""
    text = template.replace("@URL@", api.openai_url if api is not None else "http://127.0.0.1:9")
    for name, value in values.items():
        text = text.replace(f"@{name.upper()}@", value)
    return text


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in-process, without the hypothesis plugin (importing it costs a second)."""
    return pytester.runpytest("-p", "no:hypothesispytest", *args)


def exchanges_in(path: Path) -> list[Exchange]:
    (session,) = TapeReader(path).sessions()
    return [e for e in session.events if isinstance(e, Exchange)]


def empty_tape(path: Path) -> None:
    """A tape holding one session that made no HTTP calls."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = SessionStarted(session_id=new_session_id(), started_at=time.time())
    with open_session(path, header):
        pass


CHAT = """
import asyncio

import httpx
import openai


def ask(client, prompt):
    reply = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content


def test_sync_openai(evaltape_tape):
    http = evaltape_tape.client(flavor="httpx2")
    client = openai.OpenAI(base_url="@URL@", api_key="sk-test", http_client=http, max_retries=0)
    assert ask(client, "@PROMPT@") == "echo: @PROMPT@"


def test_async_openai_stream(evaltape_tape):
    async def run():
        http = evaltape_tape.client(flavor="httpx2", async_=True)
        client = openai.AsyncOpenAI(base_url="@URL@", api_key="sk", http_client=http)
        stream = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "a b c"}], stream=True
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(run()) == "echo: a b c"


def test_plain_httpx(evaltape_tape):
    with evaltape_tape.client() as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "plain"}]}
        reply = client.post("@URL@/chat/completions", json=body)
    assert reply.json()["choices"][0]["message"]["content"] == "echo: plain"
"""


@pytest.mark.slow
def test_once_records_a_tape_per_test_and_none_replays_it_offline(
    pytester: pytest.Pytester, api: FakeAPI
) -> None:
    pytester.makepyfile(test_chat=source(CHAT, api, prompt="hello"))
    result = run(pytester, "--evaltape-record-mode=once")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["evaltape: record mode once", "evaltape: wrote 3 tape(s)"])
    tapes = pytester.path / "tapes" / "test_chat"
    assert sorted(p.name for p in tapes.iterdir()) == [
        "test_async_openai_stream.tape",
        "test_plain_httpx.tape",
        "test_sync_openai.tape",
    ]
    (sync,) = exchanges_in(tapes / "test_sync_openai.tape")
    assert sync.request.url == api.openai_url + "/chat/completions"
    assert ("authorization", "[REDACTED]") in sync.request.headers
    (streamed,) = exchanges_in(tapes / "test_async_openai_stream.tape")
    assert streamed.response is not None and streamed.response.streamed
    assert len(api.requests) == 3

    api.stop()
    replayed = run(pytester)
    replayed.assert_outcomes(passed=3)
    replayed.stdout.fnmatch_lines(["evaltape: record mode none (replay only)"])
    assert len(api.requests) == 3


MISSING = """
import pytest


def test_needs_tape(evaltape_tape):
    evaltape_tape.client()


@pytest.mark.parametrize("flavor", ["httpx2"])
def test_param(evaltape_tape, flavor):
    evaltape_tape.client(flavor=flavor)
"""


def test_missing_tape_fails_with_the_command_that_records_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_missing=MISSING)
    result = run(pytester)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*evaltape: no tape for test_missing.py::test_needs_tape at "
            "tapes/test_missing/test_needs_tape.tape; record mode 'none' replays only*"
            "Record it with: pytest test_missing.py::test_needs_tape "
            "--evaltape-record-mode=once",
            "*Record it with: pytest 'test_missing.py::test_param[[]httpx2[]]' "
            "--evaltape-record-mode=once",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert not (pytester.path / "tapes").exists()


NETWORK = """
import socket

import httpx
import openai
import pytest


def test_loopback_is_blocked(evaltape_tape):
    httpx.post("@URL@/nothing")


@pytest.mark.evaltape(allow_loopback=True)
def test_loopback_allowed_when_the_test_opts_in(evaltape_tape):
    reply = httpx.post("@URL@/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 200


def test_other_addresses_are_blocked(evaltape_tape):
    socket.create_connection(("192.0.2.1", 443), timeout=0.2)


def test_lookups_are_blocked_and_sdks_cannot_swallow_it(evaltape_tape):
    client = openai.OpenAI(base_url="https://api.example.invalid/v1", api_key="sk")
    try:
        client.models.list()
    except Exception:
        pass
"""


@pytest.mark.slow
def test_replay_blocks_the_network_unless_the_test_allows_the_host(
    pytester: pytest.Pytester, api: FakeAPI, sleeps: list[float]
) -> None:
    pytester.makepyfile(test_net=source(NETWORK, api))
    for name in (
        "test_loopback_is_blocked",
        "test_loopback_allowed_when_the_test_opts_in",
        "test_other_addresses_are_blocked",
        "test_lookups_are_blocked_and_sdks_cannot_swallow_it",
    ):
        empty_tape(pytester.path / "tapes" / "test_net" / f"{name}.tape")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=3)
    assert [s for s in sleeps if s >= 0.1] == []  # no SDK retry loop waited
    result.stdout.fnmatch_lines_random(
        [
            "evaltape blocked the network: test_net.py::test_loopback_is_blocked tried to "
            f"connect to 127.0.0.1:{api.port} while replaying test_loopback_is_blocked.tape*"
            "To let this test reach it: @pytest.mark.evaltape(allow_loopback=True); to record "
            "instead: pytest test_net.py::test_loopback_is_blocked --evaltape-record-mode=once",
            "evaltape blocked the network: * tried to connect to 192.0.2.1:443 *"
            "@pytest.mark.evaltape(allow_hosts=[[]'192.0.2.1'[]])*",
            "evaltape blocked the network: * tried to look up 'api.example.invalid' *",
        ]
    )
    assert len(api.requests) == 1  # only the test that opted in reached the server


DIVERGE = """
import openai


def summarise(evaltape_tape, retries=0):
    client = openai.OpenAI(
        base_url="@URL@", api_key="sk", max_retries=retries,
        http_client=evaltape_tape.client(flavor="httpx2"),
    )
    client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "system", "content": "Be terse."},
                  {"role": "user", "content": "@PROMPT@"}],
    )


def test_raised(evaltape_tape):
    summarise(evaltape_tape, retries=2)  # the SDK's default; the miss is not retried


def test_swallowed(evaltape_tape):
    try:
        summarise(evaltape_tape)
    except Exception:
        pass


def test_wrapped(evaltape_tape):
    try:
        summarise(evaltape_tape)
    except Exception as exc:
        raise RuntimeError("the agent gave up") from exc
"""


@pytest.mark.slow
def test_a_changed_request_fails_the_test_naming_the_json_path(
    pytester: pytest.Pytester, api: FakeAPI, sleeps: list[float]
) -> None:
    pytester.makepyfile(test_div=source(DIVERGE, api, prompt="Summarise notes.txt"))
    run(pytester, "--evaltape-record-mode=once").assert_outcomes(passed=3)
    api.stop()
    pytester.makepyfile(test_div=source(DIVERGE, api, prompt="Summarize notes.txt"))
    result = run(pytester)
    result.assert_outcomes(failed=3)
    assert [s for s in sleeps if s >= 0.1] == []  # no SDK retry loop waited
    diverged = (
        "session *: request #1 of this replay (POST /v1/chat/completions) diverged from "
        'the tape at messages[[]1[]].content: sent "Summarize notes.txt", recorded '
        '"Summarise notes.txt" (nearest recorded request: #1)'
    )
    result.stdout.fnmatch_lines_random(
        [
            f"{diverged} (the code under test raised InternalServerError on it)",
            f"{diverged} (the code under test caught it)",
            f"{diverged} (the code under test then raised RuntimeError: the agent gave up)",
        ]
    )


ANTHROPIC_DIVERGE = """
import anthropic


def test_default_retries(evaltape_tape):
    client = anthropic.Anthropic(  # max_retries: the SDK's default, 2
        base_url="@BASE@", api_key="sk-ant", http_client=evaltape_tape.client(flavor="httpx2")
    )
    client.messages.create(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "@PROMPT@"}]
    )
"""


@pytest.mark.slow
def test_the_anthropic_sdk_sends_a_changed_request_once_and_the_test_fails(
    pytester: pytest.Pytester, api: FakeAPI, sleeps: list[float]
) -> None:
    make = lambda prompt: source(ANTHROPIC_DIVERGE, api, base=api.base_url, prompt=prompt)  # noqa: E731
    pytester.makepyfile(test_ant=make("Summarise notes.txt"))
    run(pytester, "--evaltape-record-mode=once").assert_outcomes(passed=1)
    api.stop()
    pytester.makepyfile(test_ant=make("Summarize notes.txt"))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    assert [s for s in sleeps if s >= 0.1] == []  # the SDK did not wait to retry
    result.stdout.fnmatch_lines(
        [
            "*request #1 of this replay (POST /v1/messages) diverged from the tape at "
            'messages[[]0[]].content: sent "Summarize notes.txt", recorded "Summarise notes.txt"'
            "* (the code under test raised InternalServerError on it)"
        ]
    )
    assert "request #2" not in result.stdout.str()


UNUSED = """
import httpx
import pytest

@MARK@
def test_calls(evaltape_tape):
    with evaltape_tape.client() as client:
        for text in @TEXTS@:
            body = {"model": "m", "messages": [{"role": "user", "content": text}]}
            client.post("@URL@/chat/completions", json=body)
"""


@pytest.mark.slow
def test_unused_recordings_fail_the_test_unless_the_marker_allows_them(
    pytester: pytest.Pytester, api: FakeAPI
) -> None:
    pytester.makepyfile(test_unused=source(UNUSED, api, mark="", texts='["one", "two"]'))
    run(pytester, "--evaltape-record-mode=once").assert_outcomes(passed=1)
    api.stop()
    pytester.makepyfile(test_unused=source(UNUSED, api, mark="", texts='["one"]'))
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "evaltape: session *: 1 recorded call(s) were "
            "never requested: #2 POST /v1/chat/completions *. Re-record the tape with: "
            "pytest test_unused.py::test_calls --evaltape-record-mode=all, or allow it with "
            "@pytest.mark.evaltape(allow_unused=True)"
        ]
    )
    allowed = source(UNUSED, api, mark="@pytest.mark.evaltape(allow_unused=True)", texts='["one"]')
    pytester.makepyfile(test_unused=allowed)
    run(pytester).assert_outcomes(passed=1)


EPISODES = """
import httpx


def test_steps(evaltape_tape):
    with evaltape_tape.client() as client:
        for text in @TEXTS@:
            body = {"model": "m", "messages": [{"role": "user", "content": text}]}
            reply = client.post("@URL@/chat/completions", json=body)
            assert reply.json()["choices"][0]["message"]["content"] == "echo: " + text
    assert @PASS@
"""


@pytest.mark.slow
def test_all_keeps_the_old_tape_when_the_test_fails_and_new_episodes_extends_it(
    pytester: pytest.Pytester, api: FakeAPI
) -> None:
    tape = pytester.path / "tapes" / "test_ep" / "test_steps.tape"
    pytester.makepyfile(test_ep=source(EPISODES, api, texts='["one"]', **{"pass": "True"}))
    run(pytester, "--evaltape-record-mode=once").assert_outcomes(passed=1)
    before = tape.read_bytes()

    pytester.makepyfile(test_ep=source(EPISODES, api, texts='["one"]', **{"pass": "False"}))
    failed = run(pytester, "--evaltape-record-mode=all")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*did not pass, so its recording was discarded*"])
    assert tape.read_bytes() == before
    assert len(api.requests) == 2
    assert [p.name for p in tape.parent.iterdir()] == ["test_steps.tape"]

    grown = source(EPISODES, api, texts='["one", "two"]', **{"pass": "True"})
    pytester.makepyfile(test_ep=grown)
    run(pytester, "--evaltape-record-mode=new_episodes").assert_outcomes(passed=1)
    assert len(api.requests) == 3  # "one" was replayed, only "two" went to the API
    assert [e.request.body.count(b"two") for e in exchanges_in(tape)] == [0, 1]
    api.stop()
    run(pytester).assert_outcomes(passed=1)


PLACED = """
import pytest


def test_default_dir(evaltape_tape):
    assert evaltape_tape.recording


@pytest.mark.evaltape("recorded/special.tape")
def test_marker_path(evaltape_tape):
    assert evaltape_tape.path.name == "special.tape"
"""


@pytest.mark.slow
def test_ini_folder_marker_path_and_a_bad_mode(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nevaltape_tape_dir = cassettes\n")
    pytester.makepyfile(test_place=PLACED)
    run(pytester, "--evaltape-record-mode=all").assert_outcomes(passed=2)
    assert (pytester.path / "cassettes" / "test_place" / "test_default_dir.tape").is_file()
    assert (pytester.path / "recorded" / "special.tape").is_file()
    bad = run(pytester, "--evaltape-record-mode=sometimes")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--evaltape-record-mode: unknown record mode 'sometimes'; valid modes: none, once*"]
    )
