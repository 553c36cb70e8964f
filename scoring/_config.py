"""Configuration: defaults, then a config file, then command-line flags.

One table, ``SETTINGS``, drives the file parser, the ``Config`` value and the
command-line flags (``scoring/_cli/_options.py``), so every setting is also a
flag and a new setting is one row.  The file is ``evaltape.toml`` (top-level
keys) or the ``[tool.evaltape]`` table of ``pyproject.toml``, found by
searching from the current folder upward to the repository root.
"""

from __future__ import annotations

import enum
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.scoring._errors import ScoringError
from evaltape.scoring.cases._fields import suggest

CONFIG_FILE = "evaltape.toml"
PYPROJECT = "pyproject.toml"


class SettingKind(enum.Enum):
    """What values a setting takes, which decides how it is checked and resolved."""

    PATH = "path"
    """A file or folder; relative values resolve against the config file's folder."""
    TEXT = "text"
    """A non-empty string, used as given."""
    COUNT = "count"
    """A whole number, at least 1."""
    SECONDS = "seconds"
    """A positive number of seconds."""
    SCORE = "score"
    """A judge score: a number from 0 to 5."""


@attrs.frozen(kw_only=True)
class Setting:
    """One row of the settings table."""

    name: str
    """The key in the config file and the ``Config`` field."""
    kind: SettingKind
    """How values are checked."""
    default: str | int | float | None
    """Used when neither file nor flag sets it (paths relative to the config's folder)."""
    help: str
    """One line for ``--help`` and the documentation."""
    metavar: str = "TEXT"
    """What the flag's argument is called in ``--help``."""

    @property
    def flag(self) -> str:
        """The command-line flag: ``judge_model`` is ``--judge-model``."""
        return "--" + self.name.replace("_", "-")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="suites",
        kind=SettingKind.PATH,
        default="evals",
        metavar="DIR",
        help="Folder of suite files (*.jsonl).",
    ),
    Setting(
        name="rubrics",
        kind=SettingKind.PATH,
        default=None,
        metavar="DIR",
        help="Folder of judge rubrics (<name>.md).",
    ),
    Setting(
        name="cassettes",
        kind=SettingKind.PATH,
        default="cassettes",
        metavar="DIR",
        help="Folder of recorded tapes that replay serves.",
    ),
    Setting(
        name="results",
        kind=SettingKind.PATH,
        default=".evaltape/results",
        metavar="DIR",
        help="Folder where run records and history are written.",
    ),
    Setting(
        name="agent",
        kind=SettingKind.TEXT,
        default=None,
        metavar="SPEC",
        help='The agent under test: "module:function" or a command template.',
    ),
    Setting(name="model", kind=SettingKind.TEXT, default=None, help="Model under test."),
    Setting(
        name="base_url",
        kind=SettingKind.TEXT,
        default=None,
        metavar="URL",
        help="Base URL of the model API for the agent.",
    ),
    Setting(
        name="judge_model",
        kind=SettingKind.TEXT,
        default=None,
        help="Model that grades judged cases; must not be the model under test.",
    ),
    Setting(
        name="judge_base_url",
        kind=SettingKind.TEXT,
        default=None,
        metavar="URL",
        help="Base URL of the judge's model API.",
    ),
    Setting(
        name="judge_mean_floor",
        kind=SettingKind.SCORE,
        default=3.5,
        metavar="SCORE",
        help="A judged case passes only if its trials' mean judge score (0-5) reaches this.",
    ),
    Setting(
        name="judge_trial_floor",
        kind=SettingKind.SCORE,
        default=2.0,
        metavar="SCORE",
        help="A judged trial scoring below this (0-5) fails, and fails its case.",
    ),
    Setting(
        name="concurrency",
        kind=SettingKind.COUNT,
        default=4,
        metavar="N",
        help="Attempts run at the same time.",
    ),
    Setting(
        name="trials",
        kind=SettingKind.COUNT,
        default=1,
        metavar="N",
        help="Attempts per case.",
    ),
    Setting(
        name="hang_limit",
        kind=SettingKind.SECONDS,
        default=300.0,
        metavar="SECONDS",
        help="A model call open longer than this is a hang and fails the attempt.",
    ),
    Setting(
        name="pricing",
        kind=SettingKind.PATH,
        default=None,
        metavar="FILE",
        help="JSON file of per-model prices that override the built-in table.",
    ),
)
"""Every setting, in documentation order."""

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
    judge_mean_floor: float
    """Lowest mean judge score (0-5) over a judged case's trials that passes."""
    judge_trial_floor: float
    """Lowest judge score (0-5) of one trial that passes."""
    concurrency: int
    """Attempts run at the same time."""
    trials: int
    """Attempts per case."""
    hang_limit: float
    """Seconds after which an open model call counts as hung."""
    pricing: Path | None
    """Price-override file, if any."""
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
    if kind in (SettingKind.PATH, SettingKind.TEXT):
        if not isinstance(value, str):
            problems.append(f"{where}: expected a string, got {_type(value)}")
            return False
        if not value.strip():
            problems.append(f"{where}: must not be empty")
            return False
        return True
    if kind is SettingKind.COUNT:
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: expected a whole number, got {_type(value)}")
            return False
        if value < 1:
            problems.append(f"{where}: must be at least 1, got {value}")
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
    return True


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
    if setting.kind in (SettingKind.SECONDS, SettingKind.SCORE):
        assert isinstance(value, int | float)
        return float(value)
    return value
