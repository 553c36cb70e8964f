"""One test's tape, the pytest fixture's value: clients that replay it or record into it."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evaltape.recorder import (
    Mode,
    RecordedSession,
    RecordingTransport,
    SessionStarted,
    Source,
    Status,
    TapeError,
    TapeReader,
    open_session,
)
from evaltape.recorder._shared import http_module, real_transport, sdk_client_options
from evaltape.recorder.tape import SessionWriter, new_session_id

from .._errors import ReplayError
from .._miss_response import MissResponses
from .._modes import Action, RecordMode, resolve_mode
from .._transport import ReplayTransport
from ._network_guard import NetworkGuard
from ._settings import MARKER, Settings, fail_test


class _Network:
    """Real transports for every flavor, sync and async, opened on first use.

    Closing drops the pools of that kind; the next request opens new ones,
    so one client closing never breaks another client of the same test.
    """

    def __init__(self) -> None:
        self._pools: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def _pool(self, request: Any, async_: bool) -> Any:
        key = (type(request).__module__.partition(".")[0], async_)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = real_transport(key[0], async_=async_)
            return pool

    def _drop(self, async_: bool) -> list[Any]:
        with self._lock:
            keys = [k for k in self._pools if k[1] is async_]
            return [self._pools.pop(k) for k in keys]

    def handle_request(self, request: Any) -> Any:
        return self._pool(request, False).handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        return await self._pool(request, True).handle_async_request(request)

    def close(self) -> None:
        for pool in self._drop(False):
            pool.close()

    async def aclose(self) -> None:
        for pool in self._drop(True):
            await pool.aclose()


# -- the fixture's value ----------------------------------------------------------


class EvaltapeTape:
    """One test's tape: hands out clients that replay it or record into it."""

    def __init__(self, item: pytest.Item, settings: Settings) -> None:
        self.settings = settings
        self.path = settings.path
        """The tape file."""
        self.mode = settings.mode
        """The record mode in force."""
        self.guard: NetworkGuard | None = None
        self.replay: ReplayTransport | None = None
        """The replay transport (replay and new_episodes), else None."""
        self._writer: SessionWriter | None = None
        self._recording: RecordingTransport | None = None
        self._network: _Network | None = None
        self._partial: Path | None = None
        self.reported = False
        recorded = self._read() if settings.mode is not RecordMode.ALL else None
        try:
            action = resolve_mode(settings.mode, recorded=recorded is not None)
        except ReplayError:
            action = None
        if action is None:
            fail_test(
                f"evaltape: no tape for {item.nodeid} at {shown_path(settings.path)}; record mode "
                f"'none' replays only and never calls the API. Record it with: "
                f"{settings.command}"
            )
        self.action = action
        """What the test does: replay, record, or replay then record."""
        if self.action is not Action.REPLAY:
            self._start_recording(item)
        fallback = self._recording
        if recorded is not None and self.action is not Action.RECORD:
            self.replay = ReplayTransport(
                recorded,
                fallback=fallback if self.action is Action.REPLAY_THEN_RECORD else None,
                ignore_headers=settings.ignore_headers,
            )
        if self.action is Action.REPLAY and settings.block_network:
            self.guard = NetworkGuard(settings, item.nodeid)
            self.guard.install()

    @property
    def transport(self) -> ReplayTransport | RecordingTransport:
        """The transport behind every client; give it to a client you build yourself."""
        if self.replay is not None:
            return self.replay
        assert self._recording is not None
        return self._recording

    @property
    def recording(self) -> bool:
        """True when this test calls the real API and writes a new tape."""
        return self.action is not Action.REPLAY

    def client(self, *, flavor: str = "httpx", async_: bool = False, **client_options: Any) -> Any:
        """An httpx/httpx2 client (``async_=True``: its async client) on this tape.

        ``flavor="httpx2"`` for openai>=3 and anthropic>=2.  The client has
        the SDKs' defaults (timeouts, pool limits); ``client_options``
        override them.  Every client of a test shares the one tape.
        """
        mod = http_module(flavor)
        options = sdk_client_options(flavor) | client_options
        cls = mod.AsyncClient if async_ else mod.Client
        # A replay miss answers as the proxy does (a final 599), so an SDK's
        # retry loop sends it once; the miss still fails the test.
        transport = self.transport if self.replay is None else MissResponses(self.replay)
        return cls(transport=transport, **options)

    def first_miss(self) -> BaseException | None:
        """The first blocked connection or replay miss of this test, if any."""
        if self.guard is not None and self.guard.blocked:
            return self.guard.blocked[0]
        if self.replay is not None and self.replay.misses:
            return self.replay.misses[0]
        return None

    # -- lifecycle ------------------------------------------------------------

    def _read(self) -> RecordedSession | None:
        if not self.path.exists():
            return None
        try:
            sessions = list(TapeReader(self.path).sessions())
        except (TapeError, OSError) as exc:
            pytest.fail(
                f"evaltape: cannot read the tape {shown_path(self.path)}: {exc}; re-record it "
                f"with: {self.settings.rerecord}",
                pytrace=False,
            )
        return sessions[-1] if sessions else None

    def _start_recording(self, item: pytest.Item) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        self._partial.unlink(missing_ok=True)
        header = SessionStarted(
            session_id=new_session_id(),
            started_at=time.time(),
            case_id=item.nodeid,
            mode=Mode.LIVE,
            source=Source.REAL_API,
            source_detail=f"pytest {item.nodeid}",
        )
        self._writer = open_session(self._partial, header)
        self._network = _Network()
        self._recording = RecordingTransport(self._writer, self._network)

    def finish(self, item: pytest.Item, passed: bool) -> None:
        """Stop blocking, check the replay or keep the recording; fail if something is wrong."""
        if self.guard is not None:
            self.guard.remove()
        if self._writer is not None:
            self._keep_recording(item, passed)
            return
        if not passed or self.replay is None:
            return
        miss = None if self.reported else self.first_miss()
        if miss is not None:
            pytest.fail(str(miss), pytrace=False)
        if self.settings.allow_unused:
            return
        try:
            self.replay.matcher.finish()
        except ReplayError as exc:
            pytest.fail(
                f"evaltape: {exc}. Re-record the tape with: "
                f"{self.settings.rerecord}, or allow it with "
                f"@pytest.mark.{MARKER}(allow_unused=True)",
                pytrace=False,
            )

    def _keep_recording(self, item: pytest.Item, passed: bool) -> None:
        assert self._writer is not None and self._partial is not None
        if self._network is not None:
            self._network.close()
        self._writer.end(Status.COMPLETED if passed else Status.FAILED)
        if passed:
            os.replace(self._partial, self.path)
            item.config.stash.setdefault(WRITTEN_TAPES, []).append(self.path)
            return
        self._partial.unlink(missing_ok=True)
        item.warn(
            pytest.PytestWarning(
                f"evaltape: {item.nodeid} did not pass, so its recording was discarded; "
                f"{shown_path(self.path)} is unchanged"
            )
        )


def shown_path(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return os.path.relpath(path)
    return str(path)


WRITTEN_TAPES = pytest.StashKey[list[Path]]()
