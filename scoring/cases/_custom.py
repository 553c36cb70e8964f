"""Custom scorers named as ``module:function``, in a case (``scorer``) or the config.

A name is resolved when the suites load, so a typo or an import error stops
the run before a token is spent, with one line naming the file, line and
field.  The folder the command runs in comes first on ``sys.path``, as for a
Python agent.  The function is called as a ``Scorer``: ``(case, session) ->
Score``; ``checks._scorers`` runs it after the outcome checks.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from ._fields import Messages, json_type

FIELD = "scorer"
"""The case field: one ``module:function`` or an array of them."""

SETTING = "scorers"
"""The config setting: ``module:function`` names, comma-separated, for every case."""

_SPEC = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")


@attrs.frozen(kw_only=True)
class NamedScorer:
    """A custom scorer and the name it was given by."""

    spec: str
    """``module:function`` as written."""
    function: Callable[..., Any] = attrs.field(eq=False, repr=False)
    """The imported function: ``(case, session) -> Score``."""
    folder: str = attrs.field(default="", eq=False, repr=False)
    """The folder it was imported from (first on ``sys.path``)."""

    def __reduce__(self) -> tuple[Callable[[str, str], NamedScorer], tuple[str, str]]:
        # Travels by name: another process imports it again, from ``folder`` when that
        # exists there, else from its own path (a Ray worker's copy of the project).
        return _reimport, (self.spec, self.folder)


class ScorerUnavailable(ImportError):
    """A custom scorer that cannot be imported where a session is scored."""


def _reimport(spec: str, folder: str) -> NamedScorer:
    # This process's own path first (a Ray worker's copy of the project is on it), then
    # the folder it was imported from when that exists here (the same machine).
    found = import_scorer(spec, None)
    if isinstance(found, str) and folder and Path(folder).is_dir():
        found = import_scorer(spec, Path(folder))
    if isinstance(found, str):
        raise ScorerUnavailable(f"custom scorer {found}")
    return found


def scorer_specs(value: object) -> list[str]:
    """The names of a checked ``scorer`` value (a string or an array of strings)."""
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, str)]


def check_scorer_field(out: Messages, value: object) -> None:
    """Shape only (``module:function``); importing happens in ``import_scorer``."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        out.append(f'field "{FIELD}": must not be an empty array')
    for i, item in enumerate(items):
        where = f"{FIELD}[{i}]" if isinstance(value, list) else FIELD
        if not isinstance(item, str):
            out.append(f'field "{where}": expected "module:function", got {json_type(item)}')
        elif not _SPEC.fullmatch(item):
            out.append(f'field "{where}": "{item}" is not module:function')


def import_scorer(spec: str, folder: Path | None) -> NamedScorer | str:
    """Import ``module:function`` (``folder``, if given, first on ``sys.path``), or say why
    not."""
    if not _SPEC.fullmatch(spec):
        return f'"{spec}" is not module:function'
    module_name, _, attr = spec.partition(":")
    where = str(folder) if folder is not None else ""
    if where and where not in sys.path:
        sys.path.insert(0, where)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is bad input
        return f'"{spec}": cannot import {module_name}: {type(exc).__name__}: {exc}'
    function = getattr(module, attr, None)
    if not callable(function):
        return f'"{spec}": {module_name} has no function {attr}'
    return NamedScorer(spec=spec, function=function, folder=where)
