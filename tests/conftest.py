"""Shared fixtures: the 127.0.0.1 API servers, a client whose wire does not matter,
and a record of the waits an SDK asks for.

- ``api``: a started ``fakeapi.FakeAPI`` (OpenAI Chat Completions, Responses and
  Anthropic Messages, JSON or SSE, scripted replies).
- ``server``: a started ``agents.chat_server.ChatServer`` (an OpenAI-compatible
  chat server whose prompt markers pick the answer).  A module or test changes
  its settings with ``@pytest.mark.chat_server(hang=4.0)``.
- ``mock_client``: ``make(handler)`` gives an ``httpx.Client`` over
  ``httpx.MockTransport(handler)``, for code whose HTTP wire does not matter.
- ``sleeps``: the seconds every ``time.sleep`` / ``anyio.sleep`` / ``asyncio.sleep``
  called from the test's own thread asked for (they still sleep), so a test
  pins that an SDK waited, or did not, without reading the clock.
- ``endless``: a shell command that never ends unless it is killed, and the
  processes running it that survive a kill, so a test pins that a timeout
  killed what a command started without timing anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents.chat_server import ChatServer
from endless import Endless
from fakeapi import FakeAPI

from evaltape.scoring.run.executors._choose import ray_environment


def pytest_configure(config: pytest.Config) -> None:
    # Ray reads these when first imported, by whichever test imports it first: no usage
    # statistics, and every Ray process of every test on 127.0.0.1.
    for key, value in ray_environment(None).items():
        os.environ.setdefault(key, value)
    config.addinivalue_line(
        "markers", "chat_server(**settings): settings of the ``server`` fixture's ChatServer"
    )
    config.addinivalue_line(
        "markers", "ray: needs the ray extra (pip install evaltape[ray]); skipped without it"
    )


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    """The fake OpenAI/Anthropic API on 127.0.0.1, stopped after the test."""
    with FakeAPI() as server:
        yield server


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ChatServer]:
    """The chat server on 127.0.0.1, with the nearest ``chat_server`` mark's settings."""
    mark = request.node.get_closest_marker("chat_server")
    with ChatServer(**(mark.kwargs if mark else {})) as s:
        yield s


@pytest.fixture
def mock_client() -> Iterator[Callable[[Callable[[Any], Any]], Any]]:
    """``make(handler)``: an ``httpx.Client`` answered by ``handler(request)``; closed after."""
    import httpx  # only the tests that ask for it pay for the import

    clients: list[httpx.Client] = []

    def make(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.Client:
        client = httpx.Client(transport=httpx.MockTransport(handler))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Seconds asked of each sleep in this thread (server threads are not counted)."""
    import anyio

    asked: list[float] = []
    mine = threading.get_ident()
    real_sleep, real_anyio, real_asyncio = time.sleep, anyio.sleep, asyncio.sleep

    def note(seconds: float) -> None:
        if threading.get_ident() == mine:
            asked.append(float(seconds))

    def sleep(seconds: float) -> None:
        note(seconds)
        real_sleep(seconds)

    async def anyio_sleep(seconds: float) -> None:
        note(seconds)
        await real_anyio(seconds)

    async def asyncio_sleep(seconds: float, result: Any = None) -> Any:
        note(seconds)
        return await real_asyncio(seconds, result)

    monkeypatch.setattr(time, "sleep", sleep)
    monkeypatch.setattr(anyio, "sleep", anyio_sleep)
    monkeypatch.setattr(asyncio, "sleep", asyncio_sleep)
    return asked


@pytest.fixture
def endless() -> Iterator[Endless]:
    """An ``Endless`` command; any process still running it is killed after the test."""
    made = Endless.unique()
    yield made
    for pid in made.pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
