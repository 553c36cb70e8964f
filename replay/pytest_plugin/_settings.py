"""What the pytest plugin is told: its option, ini keys and marker, resolved for one test."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import attrs
import pytest

from .._errors import ReplayError
from .._modes import RecordMode, parse_mode

MARKER = "evaltape"
OPTION = "--evaltape-record-mode"
INI_MODE = "evaltape_record_mode"
INI_DIR = "evaltape_tape_dir"
INI_BLOCK = "evaltape_block_network"
DEFAULT_DIR = "tapes"
"""Tapes live in ``<test file dir>/tapes/<module>/<test>.tape`` by default."""


MARKER_KEYS = frozenset(
    {"path", "record_mode", "allow_unused", "allow_hosts", "allow_loopback", "block_network"}
    | {"ignore_headers"}
)


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


def fail_test(message: str) -> NoReturn:
    """Fail the test with one line and no traceback."""
    raise pytest.fail.Exception(message, pytrace=False)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and all(isinstance(v, str) for v in value):
        return tuple(value)
    fail_test(f"{where}: @pytest.mark.{MARKER}({key}=...) takes a list of strings")


def settings_for(item: pytest.Item) -> Settings:
    """Resolve the tape settings of ``item`` (explicit flag > marker > ini > ``none``)."""
    config = item.config
    marker = item.get_closest_marker(MARKER)
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        if len(marker.args) > 1 or "path" in kwargs:
            fail_test(f"{item.nodeid}: @pytest.mark.{MARKER} takes one path")
        kwargs["path"] = marker.args[0]
    unknown = sorted(set(kwargs) - MARKER_KEYS)
    if unknown:
        valid = ", ".join(sorted(MARKER_KEYS))
        fail_test(
            f"{item.nodeid}: @pytest.mark.{MARKER} has no argument {unknown[0]!r}; valid: {valid}"
        )
    flag = config.getoption(OPTION)
    try:
        mode = parse_mode(flag or kwargs.get("record_mode") or config.getini(INI_MODE) or "none")
    except ReplayError as exc:
        fail_test(f"{item.nodeid}: {exc}")
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
