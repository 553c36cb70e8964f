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

from collections.abc import Iterator
from typing import Any

import pytest

from .._errors import ReplayError
from .._modes import RecordMode, parse_mode
from ..proxy._errors import MISS_STATUS
from ._settings import (
    DEFAULT_DIR,
    INI_BLOCK,
    INI_DIR,
    INI_MODE,
    MARKER,
    OPTION,
    fail_test,
    settings_for,
)
from ._tape import WRITTEN_TAPES, EvaltapeTape, shown_path

# -- pytest hooks and fixtures ----------------------------------------------------

_TAPE = pytest.StashKey[EvaltapeTape]()
_CALL_PASSED = pytest.StashKey[bool]()


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


def _answer_status(exc: BaseException) -> object:
    """The HTTP status an SDK (``status_code``) or httpx (``response``) error is about."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status


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
        if _answer_status(exc) == MISS_STATUS:  # an SDK's error for the miss's 599
            how = f"the code under test raised {type(exc).__name__} on it"
        else:
            how = f"the code under test then raised {type(exc).__name__}: {exc}"
        raise pytest.fail.Exception(f"{miss} ({how})", pytrace=False) from exc
    tape = item.stash.get(_TAPE, None)
    miss = tape.first_miss() if tape is not None else None
    if tape is not None and miss is not None:
        tape.reported = True
        fail_test(f"{miss} (the code under test caught it)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = bool(report.passed)
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    written = config.stash.get(WRITTEN_TAPES, [])
    if written:
        terminalreporter.write_line(f"evaltape: wrote {len(written)} tape(s)")
        for path in written:
            terminalreporter.write_line(f"  {shown_path(path)}")
