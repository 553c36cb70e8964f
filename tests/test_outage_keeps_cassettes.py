"""An outage never wipes cassettes: a session replaces a recorded one only when it is at least
as complete.

Good sessions are recorded first, from the 127.0.0.1 chat server.  Then the
provider breaks (HTTP 500 on every call, a port that refuses connections, an
answer cut off mid-body) and ``live --update-cassettes`` and ``rerecord`` run
against it: the cassette files stay byte-identical, each attempt says it kept
the recorded session, the exit code is 4, and the next replay still tests the
old sessions.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from test_live_replay_cli import case, evaltape, make_project
from test_rerecord import STALE, recorded

from evaltape.recorder import Mode, Source, TapeReader

pytestmark = pytest.mark.slow

EXIT_UNRECORDED = 4

OUTAGES = {
    "500": "the provider answered HTTP 500",
    "refused": "the model call failed: ConnectError: ",
    "cut": "the model call failed: RemoteProtocolError: ",
}
"""Each outage, and how the kept line starts saying why."""


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A 127.0.0.1 port bound but never listening: every connection is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def cassette_bytes(project: Path) -> dict[Path, bytes]:
    """Every file under the cassettes folder (left-over temporary files included)."""
    files = sorted(p for p in (project / "cassettes").rglob("*") if p.is_file())
    return {p: p.read_bytes() for p in files}


def kept_lines(stderr: str) -> list[str]:
    return sorted(
        line.removeprefix("evaltape: warning: ")
        for line in stderr.splitlines()
        if "kept the recorded session of" in line
    )


def break_provider(server: ChatServer, outage: str, refusing_url: str) -> tuple[str, ...]:
    """Break the provider; the flags that point a command at it."""
    if outage == "refused":
        return ("--base-url", refusing_url)
    server.outage = outage
    return ()


def expect_kept(stderr: str, outage: str, ids: tuple[str, ...]) -> None:
    lines = kept_lines(stderr)
    who = [f"{i} [fake-1] (attempt {n})" for i in ids for n in (1, 2)]
    expected = [f"kept the recorded session of {w}" for w in who]
    assert [line.partition(": ")[0] for line in lines] == sorted(expected), stderr
    assert all(line.partition(": ")[2].startswith(OUTAGES[outage]) for line in lines), stderr


@pytest.mark.parametrize("outage", sorted(OUTAGES))
def test_an_outage_during_live_update_cassettes_keeps_every_recorded_session(
    tmp_path: Path, server: ChatServer, refusing_url: str, outage: str
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta")
    before = cassette_bytes(project)
    flags = break_provider(server, outage, refusing_url)

    live = evaltape(
        project, "live", "--update-cassettes", "-m", "fake-1", "--trials", "2", "--retries", "1",
        "--json", "live.json", *flags,
    )  # fmt: skip
    assert live.returncode == EXIT_UNRECORDED, live.stdout + live.stderr
    expect_kept(live.stderr, outage, ("alpha", "beta"))
    found = json.loads((project / "live.json").read_text())
    assert found["exit_code"] == EXIT_UNRECORDED and found["cassettes"] == []
    assert sorted((u["case"], u["attempt"], u["kept"]) for u in found["unrecorded"]) == [
        (i, n, True) for i in ("alpha", "beta") for n in (0, 1)
    ]
    assert "cassettes updated" not in live.stderr
    assert "4 attempt(s) not recorded into the cassettes (4 recorded session(s) kept" in (
        live.stderr
    )
    assert cassette_bytes(project) == before

    replay = evaltape(project, "replay")  # offline: the old sessions are still tested
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "OK: 4 attempts replayed, harness unchanged" in replay.stdout


@pytest.mark.parametrize("outage", sorted(OUTAGES))
def test_an_outage_during_rerecord_keeps_every_recorded_session(
    tmp_path: Path, server: ChatServer, refusing_url: str, outage: str
) -> None:
    project = recorded(tmp_path, server, "alpha", "beta")
    before = cassette_bytes(project)
    flags = break_provider(server, outage, refusing_url)

    done = evaltape(project, "rerecord", "--retries", "1", *flags, env=STALE)
    assert done.returncode == EXIT_UNRECORDED, done.stdout + done.stderr
    expect_kept(done.stderr, outage, ("alpha", "beta"))
    assert "re-recorded 0 of 4 attempt(s) into 0 cassette(s)" in done.stdout
    assert cassette_bytes(project) == before

    still = evaltape(project, "replay", env=STALE)  # still stale, still the old recordings
    assert still.returncode == 3, still.stdout + still.stderr
    replay = evaltape(project, "replay")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "OK: 4 attempts replayed, harness unchanged" in replay.stdout


def test_a_broken_session_with_no_recording_is_not_written_into_the_cassette(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(
        tmp_path, [case("fresh", "say fresh")], agent="chat_agent:run", base_url=server.url
    )
    server.outage = "500"
    live = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", "--retries", "0")
    assert live.returncode == EXIT_UNRECORDED, live.stdout + live.stderr
    assert (
        "evaltape: warning: did not record fresh [fake-1] (attempt 1) into its cassette: "
        "the provider answered HTTP 500 (no recorded session to keep)"
    ) in live.stderr.splitlines()
    assert not (project / "cassettes").exists()


LOOP = {"LOOP_AGENT_CALLS": "3"}


def test_a_session_that_failed_with_fewer_answered_calls_keeps_the_recording(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(
        tmp_path, [case("steps", "take three steps")], agent="loop_agent:run",
        base_url=server.url,
    )  # fmt: skip
    first = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", env=LOOP)
    assert first.returncode == 0, first.stdout + first.stderr
    before = cassette_bytes(project)

    broke = evaltape(
        project, "live", "--update-cassettes", "-m", "fake-1",
        env=LOOP | {"LOOP_AGENT_FAIL_AFTER": "1"},
    )  # fmt: skip
    assert broke.returncode == EXIT_UNRECORDED, broke.stdout + broke.stderr
    assert kept_lines(broke.stderr) == [
        "kept the recorded session of steps [fake-1] (attempt 1): it ended failed after 1 "
        "answered model call(s), the recorded session has 3"
    ]
    assert cassette_bytes(project) == before

    # As many answered calls as the recording: as complete, so it replaces it.
    late = evaltape(
        project, "live", "--update-cassettes", "-m", "fake-1",
        env=LOOP | {"LOOP_AGENT_FAIL_AFTER": "3"},
    )  # fmt: skip
    assert late.returncode == 0, late.stdout + late.stderr
    assert "cassettes updated: 1 tape(s)" in late.stderr
    (tape,) = before
    (session,) = TapeReader(tape).sessions()
    assert session.header.mode is Mode.LIVE
    assert cassette_bytes(project) != before


def test_rerecord_keeps_the_source_label_unless_one_is_given(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(
        tmp_path, [case("alpha", "say alpha")], agent="chat_agent:run", base_url=server.url,
        concurrency=1,
    )  # fmt: skip
    first = evaltape(
        project, "live", "--update-cassettes", "-m", "fake-1", "--source", "simulated",
        "--source-detail", "competent model on 127.0.0.1",
    )  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    tape = project / "cassettes" / "basic" / "alpha.tape"

    def label() -> tuple[Source, str]:
        (session,) = TapeReader(tape).sessions()
        return session.header.source, session.header.source_detail

    kept = evaltape(project, "rerecord", env=STALE)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "re-recorded 1 of 1 attempt(s) into 1 cassette(s)" in kept.stdout
    assert label() == (Source.SIMULATED, "competent model on 127.0.0.1")
    shown = evaltape(project, "show", str(tape))
    assert "simulated" in shown.stdout and "real_api" not in shown.stdout

    # Back to the first prompt: the recording is stale again, each time.
    detail = evaltape(project, "rerecord", "--source-detail", "another server")
    assert detail.returncode == 0, detail.stdout + detail.stderr
    assert "re-recorded 1 of 1" in detail.stdout
    assert label() == (Source.SIMULATED, "another server")

    told = evaltape(project, "rerecord", "--source", "local_server", env=STALE)
    assert told.returncode == 0, told.stdout + told.stderr
    assert label() == (Source.LOCAL_SERVER, "")
