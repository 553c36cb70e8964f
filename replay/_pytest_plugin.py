"""pytest plugin: each test gets a tape that records once and replays offline.

Registered through the ``pytest11`` entry point, so installing evaltape is
enough.  A test asks for the ``evaltape_tape`` fixture (or carries the
``@pytest.mark.evaltape(...)`` marker) and builds its SDK clients from it::

    def test_summary(evaltape_tape):
        client = OpenAI(http_client=evaltape_tape.client(flavor="httpx2"))
        ...

``--evaltape-record-mode`` (``none`` by default: replay only, the CI
setting) and the state of the test's tape decide, through
``resolve_mode``, whether the test replays or records.  While a test
replays, the network is blocked for the whole process: a socket connecting
anywhere but the hosts the test allows fails the test at once, so a request
that bypasses the tape can neither spend a token nor pass unnoticed.  Misses
the client swallowed (an SDK wraps and retries transport errors) fail the
test after its body; recorded calls left unused fail it at teardown.
Recordings go to a temporary file that replaces the tape only if the test
passes.  See docs/pytest-plugin.md.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shlex
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import attrs
import pytest
from _pytest.outcomes import Failed  # public as pytest.fail.Exception, untyped there

from evaltape.recorder import (
    Mode,
    RecordedSession,
    SessionStarted,
    SessionWriter,
    Source,
    Status,
    TapeError,
    TapeReader,
    new_session_id,
    open_session,
)
from evaltape.recorder._clients import http_module, real_transport, sdk_client_options
from evaltape.recorder._transport import RecordingTransport
from evaltape.replay._errors import ReplayError
from evaltape.replay._modes import Action, RecordMode, parse_mode, resolve_mode
from evaltape.replay._transport import ReplayTransport

MARKER = "evaltape"
OPTION = "--evaltape-record-mode"
INI_MODE = "evaltape_record_mode"
INI_DIR = "evaltape_tape_dir"
INI_BLOCK = "evaltape_block_network"
DEFAULT_DIR = "tapes"
"""Tapes live in ``<test file dir>/tapes/<module>/<test>.tape`` by default."""

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
"""Host names that ``allow_loopback=True`` lets a replaying test look up."""

MARKER_KEYS = frozenset(
    {"path", "record_mode", "allow_unused", "allow_hosts", "allow_loopback", "block_network"}
    | {"ignore_headers"}
)


class NetworkBlocked(Failed):
    """A replaying test tried to reach the network.

    A ``BaseException`` (pytest's failure outcome), so SDK retry loops and
    ``except Exception`` blocks in the code under test cannot swallow it.
    """


# -- settings -----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Settings:
    """What one test's tape does, from the command line, ini file and marker."""

    path: Path
    """The tape file."""
    mode: RecordMode
    """The record mode in force."""
    allow_unused: bool
    """Recorded calls nobody requested do not fail the test."""
    allow_hosts: frozenset[str]
    """Hosts a replaying test may still connect to (names or addresses)."""
    allow_loopback: bool
    """A replaying test may connect to loopback addresses (a local server)."""
    block_network: bool
    """Block the network while the test replays."""
    ignore_headers: tuple[str, ...]
    """Extra request headers left out of matching."""
    command: str
    """The command line that records this test (mode ``once``)."""
    rerecord: str
    """The command line that records this test again (mode ``all``)."""


def _test_name(item: pytest.Item) -> str:
    """``Class.test_name[param]`` as a safe file name: ``Class.test_name-param``."""
    name = ".".join(item.nodeid.split("::")[1:]) or item.name
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")


def _command(item: pytest.Item, mode: str) -> str:
    """The command that runs just this test with ``mode``, from where pytest was started."""
    here = item.config.invocation_params.dir
    try:
        where = os.path.relpath(item.path, here)
    except ValueError:  # another drive
        where = str(item.path)
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else ""
    target = f"{where}::{rest}" if rest else where
    return f"pytest {shlex.quote(target)} {OPTION}={mode}"


def _bad(message: str) -> NoReturn:
    """Fail the test with one line and no traceback."""
    raise pytest.fail.Exception(message, pytrace=False)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and all(isinstance(v, str) for v in value):
        return tuple(value)
    _bad(f"{where}: @pytest.mark.{MARKER}({key}=...) takes a list of strings")


def settings_for(item: pytest.Item) -> Settings:
    """Resolve the tape settings of ``item`` (explicit flag > marker > ini > ``none``)."""
    config = item.config
    marker = item.get_closest_marker(MARKER)
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        if len(marker.args) > 1 or "path" in kwargs:
            _bad(f"{item.nodeid}: @pytest.mark.{MARKER} takes one path")
        kwargs["path"] = marker.args[0]
    unknown = sorted(set(kwargs) - MARKER_KEYS)
    if unknown:
        valid = ", ".join(sorted(MARKER_KEYS))
        _bad(f"{item.nodeid}: @pytest.mark.{MARKER} has no argument {unknown[0]!r}; valid: {valid}")
    flag = config.getoption(OPTION)
    try:
        mode = parse_mode(flag or kwargs.get("record_mode") or config.getini(INI_MODE) or "none")
    except ReplayError as exc:
        _bad(f"{item.nodeid}: {exc}")
    folder = item.path.parent
    if kwargs.get("path"):
        path = folder / str(kwargs["path"])
    else:
        path = folder / str(config.getini(INI_DIR) or DEFAULT_DIR) / item.path.stem
        path = path / f"{_test_name(item)}.tape"
    block = kwargs.get("block_network")
    return Settings(
        path=path,
        mode=mode,
        allow_unused=bool(kwargs.get("allow_unused", False)),
        allow_hosts=frozenset(
            h.lower().strip("[]")
            for h in _strings(kwargs.get("allow_hosts", ()), "allow_hosts", item.nodeid)
        ),
        allow_loopback=bool(kwargs.get("allow_loopback", False)),
        block_network=bool(config.getini(INI_BLOCK)) if block is None else bool(block),
        ignore_headers=_strings(kwargs.get("ignore_headers", ()), "ignore_headers", item.nodeid),
        command=_command(item, RecordMode.ONCE.value),
        rerecord=_command(item, RecordMode.ALL.value),
    )


# -- the network guard ----------------------------------------------------------


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host in LOOPBACK_NAMES
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


class NetworkGuard:
    """Fails every socket connection and name lookup a replaying test did not allow.

    Patches ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``
    for the whole process between ``install()`` and ``remove()``; sync
    clients, asyncio and anyio all connect through them.  Unix sockets are
    always allowed.  Addresses an allowed host name resolves to become
    allowed too.
    """

    def __init__(self, settings: Settings, nodeid: str) -> None:
        self.settings = settings
        self.nodeid = nodeid
        self.allowed = set(settings.allow_hosts)
        self.blocked: list[NetworkBlocked] = []
        self._lock = threading.Lock()
        self._saved: tuple[Any, Any, Any] | None = None

    def allows(self, host: str) -> bool:
        """Whether a replaying test may reach ``host`` (a name or an address)."""
        host = host.lower().strip("[]")
        if self.settings.allow_loopback and _is_loopback(host):
            return True
        with self._lock:
            return host in self.allowed

    def _block(self, what: str, host: str) -> None:
        hint = "allow_loopback=True" if _is_loopback(host) else f"allow_hosts=[{host!r}]"
        error = NetworkBlocked(
            f"evaltape blocked the network: {self.nodeid} tried to {what} while replaying "
            f"{self.settings.path.name} (replayed tests never reach the network; clients from "
            f"the evaltape_tape fixture are answered by the tape). To let this test reach it: "
            f"@pytest.mark.{MARKER}({hint}); to record instead: {self.settings.command}",
            pytrace=False,
        )
        with self._lock:
            self.blocked.append(error)
        raise error

    def check_connect(self, sock: socket.socket, address: Any) -> None:
        """Raise ``NetworkBlocked`` unless ``sock`` may connect to ``address``."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host, port = str(address[0]), address[1]
        if not self.allows(host):
            shown = f"[{host}]" if ":" in host else host
            self._block(f"connect to {shown}:{port}", host)

    def check_lookup(self, host: Any) -> bool:
        """Raise ``NetworkBlocked`` unless ``host`` may be looked up; True if it is allowed."""
        if host is None:
            return False
        name = (host.decode("idna") if isinstance(host, bytes) else str(host)).lower()
        if self.allows(name):
            return True
        if not _is_address(name):
            self._block(f"look up {name!r}", name)
        return False

    def install(self) -> None:
        """Start blocking (idempotent)."""
        if self._saved is not None:
            return
        connect, connect_ex, getaddrinfo = (
            socket.socket.connect,
            socket.socket.connect_ex,
            socket.getaddrinfo,
        )
        self._saved = (connect, connect_ex, getaddrinfo)
        guard = self

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            guard.check_connect(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check_connect(sock, address)
            return connect_ex(sock, address)

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            trusted = guard.check_lookup(host)
            found = getaddrinfo(host, *args, **kwargs)
            if trusted:
                with guard._lock:
                    guard.allowed.update(str(info[4][0]).lower() for info in found)
            return found

        socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = guarded_getaddrinfo

    def remove(self) -> None:
        """Stop blocking."""
        if self._saved is None:
            return
        connect, connect_ex, getaddrinfo = self._saved
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo
        self._saved = None


# -- the real side of a recording -------------------------------------------------


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
            _bad(
                f"evaltape: no tape for {item.nodeid} at {_shown(settings.path)}; record mode "
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
        return cls(transport=self.transport, **options)

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
                f"evaltape: cannot read the tape {_shown(self.path)}: {exc}; re-record it "
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
            item.config.stash.setdefault(_WRITTEN, []).append(self.path)
            return
        self._partial.unlink(missing_ok=True)
        item.warn(
            pytest.PytestWarning(
                f"evaltape: {item.nodeid} did not pass, so its recording was discarded; "
                f"{_shown(self.path)} is unchanged"
            )
        )


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return os.path.relpath(path)
    return str(path)


# -- pytest hooks and fixtures ----------------------------------------------------

_TAPE = pytest.StashKey[EvaltapeTape]()
_CALL_PASSED = pytest.StashKey[bool]()
_WRITTEN = pytest.StashKey[list[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evaltape", "evaltape record and replay")
    modes = [m.value for m in RecordMode]
    group.addoption(
        OPTION,
        dest=OPTION,
        default=None,
        metavar="MODE",
        help=f"record mode for tests using evaltape_tape: {', '.join(modes)} "
        f"(default: the {INI_MODE} ini option, else none = replay only)",
    )
    parser.addini(INI_MODE, "default evaltape record mode (none, once, new_episodes, all)")
    parser.addini(INI_DIR, f"folder of tapes, relative to each test file (default {DEFAULT_DIR})")
    parser.addini(INI_BLOCK, "block the network while a test replays (default true)", "bool", True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path=None, *, record_mode=None, allow_unused=False, allow_hosts=(), "
        "allow_loopback=False, block_network=True, ignore_headers=()): "
        "record and replay this test's model traffic (see docs/pytest-plugin.md)",
    )
    value = config.getoption(OPTION) or config.getini(INI_MODE)
    if value:
        try:
            parse_mode(value)
        except ReplayError as exc:
            raise pytest.UsageError(f"{OPTION}: {exc}") from exc


def pytest_report_header(config: pytest.Config) -> str:
    mode = parse_mode(config.getoption(OPTION) or config.getini(INI_MODE) or "none")
    note = " (replay only)" if mode is RecordMode.NONE else ""
    return f"evaltape: record mode {mode.value}{note}"


@pytest.fixture
def evaltape_tape(request: pytest.FixtureRequest) -> Iterator[EvaltapeTape]:
    """This test's tape: ``evaltape_tape.client(flavor=...)`` replays or records it."""
    item = request.node
    assert isinstance(item, pytest.Item)
    tape = EvaltapeTape(item, settings_for(item))
    item.stash[_TAPE] = tape
    try:
        yield tape
    finally:
        tape.finish(item, item.stash.get(_CALL_PASSED, False))


@pytest.fixture(autouse=True)
def _evaltape_marker(request: pytest.FixtureRequest) -> None:
    """A test carrying the marker gets its tape (and the network guard) even
    when it reaches the fixture only through another fixture, or not at all."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("evaltape_tape")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After the test body: fail on replay misses the code under test swallowed."""
    try:
        yield
    except Exception as exc:
        tape = item.stash.get(_TAPE, None)
        miss = tape.first_miss() if tape is not None else None
        if tape is None or miss is None or miss is exc:
            raise
        tape.reported = True
        raise pytest.fail.Exception(
            f"{miss} (the code under test then raised {type(exc).__name__}: {exc})",
            pytrace=False,
        ) from exc
    tape = item.stash.get(_TAPE, None)
    miss = tape.first_miss() if tape is not None else None
    if tape is not None and miss is not None:
        tape.reported = True
        _bad(f"{miss} (the code under test caught it)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = bool(report.passed)
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    written = config.stash.get(_WRITTEN, [])
    if written:
        terminalreporter.write_line(f"evaltape: wrote {len(written)} tape(s)")
        for path in written:
            terminalreporter.write_line(f"  {_shown(path)}")
