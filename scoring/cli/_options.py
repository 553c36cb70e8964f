"""Command-line flags for settings, driven by the one settings table.

``@config_options("suites", "rubrics")`` gives a command ``--suites`` and
``--rubrics`` (plus ``--config FILE``) and hands its body a resolved
``config: Config``: defaults < config file < flags.  A command that needs
more settings names them; the flag, its type and its help come from
``scoring._config.SETTINGS``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from .._config import ConfigError, load_config
from .._settings import COUNT_MAX, SECONDS_MAX, SETTINGS, Setting, SettingKind
from ..cases._cases import split_cases

R = TypeVar("R")

PATH_SETTINGS: tuple[str, ...] = ("suites", "rubrics", "cassettes", "results")
"""What ``@config_options()`` adds when no names are given."""

_BY_NAME = {s.name: s for s in SETTINGS}


class Finite(click.FloatRange):
    """A ``FloatRange`` that also refuses ``nan`` and ``inf`` (which every range admits)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


SECONDS = Finite(min=0, min_open=True, max=SECONDS_MAX)
"""A positive number of seconds, at most 30 days."""
SEED = click.IntRange(min=0, max=2**63 - 1)
"""A sampling seed: it is recorded in session headers as a 64-bit integer."""
RETRIES = click.IntRange(min=0, max=100)
"""Retries of one model call."""
PROBABILITY = Finite(min=0, max=1, min_open=True, max_open=True)
"""A significance level."""


def _click_type(setting: Setting) -> click.ParamType[Any]:
    if setting.kind is SettingKind.COUNT:
        return click.IntRange(min=1, max=COUNT_MAX)
    if setting.kind is SettingKind.SECONDS:
        return SECONDS
    if setting.kind is SettingKind.SCORE:
        return Finite(min=0, max=5)
    return click.STRING


def _option(setting: Setting) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    if setting.kind is SettingKind.RULES:
        return click.option(
            setting.flag,
            setting.name,
            multiple=True,
            callback=_rules,
            metavar="REGEX=REPLACEMENT",
            help=setting.help
            + f" Repeat for more rules; replaces the config's [config: {setting.name}]",
        )
    if setting.kind is SettingKind.SWITCH:
        name = setting.name.replace("_", "-")
        return click.option(
            f"--{name}/--no-{name}",
            setting.name,
            default=None,
            help=setting.help + f" [config: {setting.name}; default: {setting.default}]",
        )
    if setting.kind is SettingKind.PRICES:
        return click.option(
            setting.flag,
            setting.name,
            multiple=True,
            callback=_prices,
            metavar=setting.metavar,
            help=setting.help + f" Repeat for more; replaces the config's [config: {setting.name}]",
        )
    if setting.kind is SettingKind.UPSTREAMS:
        return click.option(
            setting.flag,
            setting.name,
            multiple=True,
            callback=_upstreams,
            metavar=setting.metavar,
            help=setting.help + f" Repeat for more; replaces the config's [config: {setting.name}]",
        )
    default = "<suites>/rubrics" if setting.name == "rubrics" else setting.default
    shown = f" [config: {setting.name}" + (f"; default: {default}]" if default else "]")
    return click.option(
        setting.flag,
        setting.name,
        type=_click_type(setting),
        default=None,
        metavar=setting.metavar,
        help=setting.help + shown,
    )


def _rules(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> object:
    """``--scrub REGEX=REPLACEMENT`` flags as the table the config file would hold."""
    if not given:
        return None
    table: dict[str, str] = {}
    for rule in given:
        pattern, sep, replacement = rule.rpartition("=")
        if not sep or not pattern:
            raise click.BadParameter(f"expected REGEX=REPLACEMENT, got {rule!r}", ctx, param)
        table[pattern] = replacement
    return table


def _prices(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> object:
    """``--price MODEL=IN/OUT`` flags as the table the config file would hold (each value is
    checked when the prices are resolved, as the file's are)."""
    if not given:
        return None
    table: dict[str, str] = {}
    for text in given:
        model, sep, rates = text.rpartition("=")
        table[model if sep else text] = rates if sep else ""
    return table


def _upstreams(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> object:
    """``--upstream NAME=URL`` flags as the table the config file would hold."""
    if not given:
        return None
    table: dict[str, str] = {}
    for text in given:
        name, sep, url = text.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME=URL, got {text!r}", ctx, param)
        table[name.strip()] = url.strip()
    return table


class CommonFirst(click.Command):
    """A command whose ``--help`` lists the everyday options first, the rest after.

    ``@click.command(cls=CommonFirst, common=("model", "trials"))`` names the
    common ones by parameter name; both sections keep the declaration order.
    """

    def __init__(self, *args: Any, common: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.common = common

    def sections(self, ctx: click.Context) -> tuple[tuple[str, list[click.Parameter]], ...]:
        """``("Common options", [...])`` and ``("More options", [...])``."""
        params = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        common: list[click.Parameter] = [p for p in params if p.name in self.common]
        rest: list[click.Parameter] = [p for p in params if p.name not in self.common]
        return (("Common options", common), ("More options", rest))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, params in self.sections(ctx):
            rows = [r for r in (p.get_help_record(ctx) for p in params) if r is not None]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def config_options(*names: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Add a flag per named setting (default: the four folders) and ``--config FILE``.

    The decorated body receives ``config`` instead of the individual flags.
    A refused configuration prints one line per problem and exits 2.
    """
    chosen = names or PATH_SETTINGS
    unknown = [n for n in chosen if n not in _BY_NAME]
    if unknown:
        raise ValueError(f"no such settings: {unknown}")

    def decorate(func: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            config_file = kwargs.pop("config_file")
            overrides = {name: kwargs.pop(name) for name in chosen}
            try:
                config = load_config(Path.cwd(), overrides, config_file=config_file)
            except ConfigError as exc:
                for problem in exc.problems:
                    click.echo(f"evaltape: error: {problem}", err=True)
                raise SystemExit(2) from exc
            return func(*args, config=config, **kwargs)

        decorated: Callable[..., Any] = wrapper
        for name in reversed(chosen):
            decorated = _option(_BY_NAME[name])(decorated)
        decorated = click.option(
            "--config",
            "config_file",
            type=click.Path(dir_okay=False),
            default=None,
            metavar="FILE",
            help="Read settings from FILE instead of searching for evaltape.toml/pyproject.toml.",
        )(decorated)
        return decorated

    return decorate


def _split_cases(ctx: click.Context, param: click.Parameter, given: tuple[str, ...]) -> object:
    return split_cases(given)


def cases_option(func: Callable[..., R]) -> Callable[..., R]:
    """``--cases ID[,ID...]`` (repeatable), handed to the body as ``cases: tuple[str, ...]``.

    Each value is an exact case id or, when no id equals it, an id prefix;
    ``scoring.cases.select`` resolves them, the same for every command.
    """
    return click.option(
        "--cases",
        "cases",
        multiple=True,
        callback=_split_cases,
        metavar="ID[,ID...]",
        help="Only these cases: each an exact id or, when no id equals it, an id prefix. "
        "Comma-separated and/or repeated.",
    )(func)


@attrs.frozen(kw_only=True)
class ResultFiles:
    """Where a run's machine-readable results go (``--junit``, ``--json``, the job summary)."""

    junit: Path | None = None
    """``--junit FILE``: JUnit XML."""
    json: str | None = None
    """``--json FILE``: the outcome as JSON; ``-`` is stdout (the text report then goes to
    stderr)."""
    step_summary: bool = True
    """Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` when it is set."""


def result_options(func: Callable[..., R]) -> Callable[..., R]:
    """``--junit FILE``, ``--json FILE`` and ``--no-step-summary``, handed to the body as
    ``results: ResultFiles``.  The same three flags on every command that runs or compares."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> R:
        files = ResultFiles(
            junit=kwargs.pop("junit_file"),
            json=kwargs.pop("json_file"),
            step_summary=not kwargs.pop("no_step_summary"),
        )
        return func(*args, results=files, **kwargs)

    decorated: Callable[..., Any] = wrapper
    for option in (
        click.option(
            "--no-step-summary",
            is_flag=True,
            help="Do not append the Markdown summary to $GITHUB_STEP_SUMMARY (appended "
            "whenever that variable is set).",
        ),
        click.option(
            "--json",
            "json_file",
            metavar="FILE",
            default=None,
            help="Write the outcome as JSON to FILE (docs/json.md); '-' writes it to stdout "
            "and the text report to stderr.",
        ),
        click.option(
            "--junit",
            "junit_file",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help="Write JUnit XML to FILE: one testcase per case and model (docs/ci.md).",
        ),
    ):
        decorated = option(decorated)
    return decorated
