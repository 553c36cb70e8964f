"""Configuration: defaults, then a config file, then command-line flags.

One table, ``SETTINGS``, drives the file parser, the ``Config`` value and the
command-line flags (``scoring/cli/_options.py``), so every setting is also a
flag and a new setting is one row.  The file is ``evaltape.toml`` (top-level
keys) or the ``[tool.evaltape]`` table of ``pyproject.toml``, found by
searching from the current folder upward to the repository root.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import attrs

from evaltape.recorder.redact import ScrubError, ScrubRule
from evaltape.replay import Route, RouteError, parse_route

from ._errors import ScoringError
from ._settings import COUNT_MAX, SECONDS_MAX, SETTINGS, Setting, SettingKind
from .cases._fields import suggest

CONFIG_FILE = "evaltape.toml"
PYPROJECT = "pyproject.toml"


SETTING_NAMES: tuple[str, ...] = tuple(s.name for s in SETTINGS)
_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


@attrs.frozen(kw_only=True)
class Config:
    """Resolved settings; paths are absolute.  See ``SETTINGS`` for each one's meaning."""

    suites: Path
    """Folder of suite files."""
    rubrics: Path
    """Folder of judge rubrics."""
    cassettes: Path
    """Folder of recorded tapes."""
    results: Path
    """Folder of run records and history."""
    agent: str | None
    """The agent under test, as configured (not yet resolved)."""
    model: str | None
    """Model under test."""
    base_url: str | None
    """Base URL of the agent's model API."""
    judge_model: str | None
    """Model that grades judged cases."""
    judge_base_url: str | None
    """Base URL of the judge's model API."""
    judge_constrain: str | None
    """How the judge's answer is constrained at the provider (``none``, ``json``, ``schema``)."""
    judge_mean_floor: float
    """Lowest mean judge score (0-5) over a judged case's trials that passes."""
    judge_trial_floor: float
    """Lowest judge score (0-5) of one trial that passes."""
    concurrency: int
    """Attempts run at the same time."""
    executor: str
    """Where attempts run: ``threads`` or ``ray``."""
    ray_address: str | None
    """The Ray cluster to use with ``executor = "ray"``; None: a local instance for the run."""
    ray_working_dir: str | None
    """With Ray: the folder shipped to workers as Ray's ``working_dir``, or ``off``; None:
    the project folder when the cluster is not on this machine, else nothing."""
    trials: int
    """Attempts per case."""
    hang_limit: float
    """Seconds after which an open model call counts as hung."""
    pricing: Path | None
    """Price-override file, if any."""
    dataset: str | None
    """Langfuse dataset ``evaltape export`` links attempts to; None: none."""
    scorers: str | None
    """Custom scorers for every case, ``module:function`` comma-separated; None: none."""
    sandbox: bool
    """Run verify commands and the agent's bash tool in the sandbox (``evaltape.replay``)."""
    scrub: tuple[ScrubRule, ...]
    """User scrub rules for request bodies, in file order (the workspace path is built in)."""
    upstream: tuple[Route, ...]
    """Providers' base URLs for command agents, besides ``base_url`` (docs/agents.md)."""
    price: tuple[str, ...]
    """``MODEL=IN/OUT`` prices (USD per million tokens) merged over ``pricing``; checked
    when the prices are resolved (``scoring.cost``)."""
    source: Path | None
    """The config file that was read, or None when only defaults and flags apply."""


class ConfigError(ScoringError):
    """The configuration was refused; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("\n".join(problems))


def load_config(
    start_dir: str | os.PathLike[str],
    overrides: Mapping[str, object] | None = None,
    *,
    config_file: str | os.PathLike[str] | None = None,
) -> Config:
    """Resolve settings: defaults < config file < ``overrides`` (the flags).

    ``config_file`` names the file to read instead of searching upward from
    ``start_dir``.  Relative paths in a file resolve against its folder;
    relative paths in ``overrides`` against ``start_dir``.  ``None`` values in
    ``overrides`` mean "not given".  Raises ``ConfigError``.
    """
    start = Path(os.path.abspath(start_dir))
    if config_file is not None:
        given = Path(os.path.abspath(config_file))
        if not given.is_file():
            raise ConfigError([f"{display_path(given)}: no such config file"])
        source: Path | None = given
    else:
        source = find_config(start)
    problems: list[str] = []
    from_file: dict[str, object] = {}
    if source is not None:
        from_file = _read_file(source, problems)
    base = source.parent if source is not None else start
    values: dict[str, object] = {}
    for setting in SETTINGS:
        if setting.default is not None:
            values[setting.name] = _resolve(setting, setting.default, base)
    for name, value in from_file.items():
        values[name] = _resolve(_BY_NAME[name], value, base)
    for name, value in (overrides or {}).items():
        if value is None:
            continue
        if name not in _BY_NAME:
            problems.append(f'unknown setting "{name}"{suggest(name, SETTING_NAMES)}')
        elif _check(problems, _BY_NAME[name].flag, _BY_NAME[name], value):
            values[name] = _resolve(_BY_NAME[name], value, start)
    if problems:
        raise ConfigError(problems)
    if "rubrics" not in values:
        suites = values["suites"]
        assert isinstance(suites, Path)
        values["rubrics"] = suites / "rubrics"
    values.setdefault("scrub", ())
    values.setdefault("upstream", ())
    values.setdefault("price", ())
    for setting in SETTINGS:
        values.setdefault(setting.name, None)
    return Config(source=source, **values)  # type: ignore[arg-type]


def find_config(start: Path) -> Path | None:
    """The nearest ``evaltape.toml`` or ``pyproject.toml`` with ``[tool.evaltape]``.

    Searches ``start`` and its parents, stopping after a folder holding
    ``.git`` (the repository root) or at the filesystem root.  Refuses a folder
    where both files configure evaltape.
    """
    for folder in (start, *start.parents):
        own = folder / CONFIG_FILE
        pyproject = folder / PYPROJECT
        has_section = pyproject.is_file() and _has_section(pyproject)
        if own.is_file() and has_section:
            raise ConfigError(
                [
                    f"{display_path(own)} and {display_path(pyproject)} [tool.evaltape] "
                    "both configure evaltape; keep one"
                ]
            )
        if own.is_file():
            return own
        if has_section:
            return pyproject
        if (folder / ".git").exists():
            return None
    return None


def scorer_names(config: Config) -> tuple[tuple[str, ...], str]:
    """The configured custom scorers, and where they were set (for load-time errors)."""
    names = tuple(p.strip() for p in (config.scorers or "").split(",") if p.strip())
    where = display_path(config.source) if config.source is not None else "--scorers"
    return names, where


def display_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies inside it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{display_path(path)}: invalid TOML: {exc}"]) from exc
    except UnicodeDecodeError as exc:
        where = f"byte {exc.start + 1}"
        raise ConfigError(
            [f"{display_path(path)}: not UTF-8 text ({where}); not a TOML file"]
        ) from exc
    except OSError as exc:
        raise ConfigError([f"{display_path(path)}: cannot read: {exc.strerror}"]) from exc


def _has_section(pyproject: Path) -> bool:
    tool = _load_toml(pyproject).get("tool")
    return isinstance(tool, dict) and "evaltape" in tool


def _read_file(path: Path, problems: list[str]) -> dict[str, object]:
    data = _load_toml(path)
    label = display_path(path)
    if path.name == PYPROJECT:
        tool = data.get("tool")
        table = tool.get("evaltape") if isinstance(tool, dict) else None
        label += ": [tool.evaltape]"
        if not isinstance(table, dict):
            problems.append(f"{label}: missing (or not a table)")
            return {}
    else:
        table = data
    good: dict[str, object] = {}
    for name, value in table.items():
        if name not in _BY_NAME:
            problems.append(f'{label}: unknown setting "{name}"{suggest(name, SETTING_NAMES)}')
        elif _check(problems, f'{label}: setting "{name}"', _BY_NAME[name], value):
            good[name] = value
    return good


def _check(problems: list[str], where: str, setting: Setting, value: object) -> bool:
    kind = setting.kind
    if kind is SettingKind.RULES:
        return _check_rules(problems, where, value)
    if kind is SettingKind.UPSTREAMS:
        return _check_upstreams(problems, where, value)
    if kind is SettingKind.PRICES:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            problems.append(f'{where}: expected a table of model = "IN/OUT" (USD per million)')
            return False
        return True
    if kind is SettingKind.SWITCH:
        if not isinstance(value, bool):
            problems.append(f"{where}: expected true or false, got {_type(value)}")
            return False
        return True
    if kind in (SettingKind.PATH, SettingKind.TEXT, SettingKind.URL):
        if not isinstance(value, str):
            problems.append(f"{where}: expected a string, got {_type(value)}")
            return False
        if not value.strip():
            problems.append(f"{where}: must not be empty")
            return False
        if kind is SettingKind.URL and not _is_http_url(value):
            problems.append(f"{where}: expected an http:// or https:// URL, got {value!r}")
            return False
        return True
    if kind is SettingKind.COUNT:
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: expected a whole number, got {_type(value)}")
            return False
        if value < 1:
            problems.append(f"{where}: must be at least 1, got {value}")
            return False
        if value > COUNT_MAX:
            problems.append(f"{where}: must be at most {COUNT_MAX}, got {value}")
            return False
        return True
    if kind is SettingKind.SCORE:
        if not isinstance(value, int | float) or isinstance(value, bool):
            problems.append(f"{where}: expected a score from 0 to 5, got {_type(value)}")
            return False
        if not 0 <= value <= 5:
            problems.append(f"{where}: must be a score from 0 to 5, got {value}")
            return False
        return True
    if not isinstance(value, int | float) or isinstance(value, bool):
        problems.append(f"{where}: expected a number of seconds, got {_type(value)}")
        return False
    if not math.isfinite(value) or value <= 0:
        problems.append(f"{where}: must be a positive number of seconds, got {value}")
        return False
    if value > SECONDS_MAX:
        problems.append(f"{where}: must be at most {SECONDS_MAX:g} seconds (30 days), got {value}")
        return False
    return True


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    if any(c.isspace() or not c.isprintable() for c in value):
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _check_rules(problems: list[str], where: str, value: object) -> bool:
    if not isinstance(value, dict):
        problems.append(f"{where}: expected a table of regular expression = replacement")
        return False
    good = True
    for pattern, replacement in value.items():
        if not isinstance(replacement, str):
            problems.append(
                f"{where}: rule {pattern!r}: expected a string, got {_type(replacement)}"
            )
            good = False
            continue
        try:
            ScrubRule(pattern=pattern, replacement=replacement)
        except ScrubError as exc:
            problems.append(f"{where}: {exc}")
            good = False
    return good


def _check_upstreams(problems: list[str], where: str, value: object) -> bool:
    if not isinstance(value, dict):
        problems.append(f"{where}: expected a table of provider name = base URL")
        return False
    good = True
    for name, url in value.items():
        try:
            parse_route(f"{name}={url}" if isinstance(url, str) else f"{name}=")
        except RouteError as exc:
            problems.append(f"{where}: {exc}")
            good = False
    return good


def _type(value: object) -> str:
    names: dict[type, str] = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "table",
    }
    return names.get(type(value), type(value).__name__)


def _resolve(setting: Setting, value: object, base: Path) -> object:
    if setting.kind is SettingKind.PATH:
        path = Path(str(value)).expanduser()
        return Path(os.path.normpath(base / path))
    if setting.kind is SettingKind.RULES:
        assert isinstance(value, dict)
        return tuple(ScrubRule(pattern=k, replacement=v) for k, v in value.items())
    if setting.kind is SettingKind.UPSTREAMS:
        assert isinstance(value, dict)
        return tuple(parse_route(f"{k}={v}") for k, v in value.items())
    if setting.kind is SettingKind.PRICES:
        assert isinstance(value, dict)
        return tuple(f"{k}={v}" for k, v in value.items())
    if setting.kind in (SettingKind.SECONDS, SettingKind.SCORE):
        assert isinstance(value, int | float)
        return float(value)
    return value
