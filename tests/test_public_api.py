"""The public API: every type a public name mentions is public itself, and each public
module's names are counted (docs/api.md).

A public name is one in the ``__all__`` of a public module.  Its type hints (a class's
fields and its public methods' parameters and returns, a function's signature) are
followed from type to type; an evaltape class met on the way that no public module
exports is a private type showing through the public API.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import sys
import typing
from collections.abc import Iterator
from typing import Any

PUBLIC = (
    "evaltape",
    "evaltape.recorder",
    "evaltape.recorder.redact",
    "evaltape.recorder.script",
    "evaltape.recorder.tape",
    "evaltape.replay",
    "evaltape.scoring",
    "evaltape.scoring.cases",
    "evaltape.scoring.cost",
    "evaltape.scoring.judge",
    "evaltape.scoring.outputs.formats",
    "evaltape.scoring.outputs.html",
    "evaltape.scoring.results",
    "evaltape.scoring.run",
    "evaltape.scoring.sandbox",
    "evaltape.scoring.stats",
    "evaltape.scoring.verdicts",
)
"""The public modules, as docs/api.md lists them."""


def _exported() -> dict[int, str]:
    found: dict[int, str] = {}
    for name in PUBLIC:
        module = importlib.import_module(name)
        for attr in module.__all__:
            found.setdefault(id(getattr(module, attr)), f"{name}.{attr}")
    return found


def _namespace() -> dict[str, Any]:
    """Every name of every evaltape module: what a string annotation may mention (a
    recursive alias names types its user module never imports)."""
    names: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("evaltape") and module is not None:
            names.update(vars(module))
    return names


def _hints(obj: object, namespace: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(where, type) of each public annotation of ``obj``."""
    if inspect.isclass(obj):
        if issubclass(obj, enum.Enum):
            return
        yield from _resolved(obj, "", namespace)
        for attr, member in vars(obj).items():
            if attr.startswith("_") and attr != "__init__":
                continue
            if isinstance(member, property):
                member = member.fget
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if inspect.isfunction(member):
                yield from _resolved(member, f".{attr}", namespace)
    elif inspect.isfunction(obj):
        yield from _resolved(obj, "", namespace)


def _resolved(obj: Any, prefix: str, namespace: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    try:
        hints = typing.get_type_hints(obj)
    except NameError:  # a name only a string alias of another module mentions
        hints = typing.get_type_hints(obj, localns=namespace)
    for name, hint in hints.items():
        if not name.startswith("_"):
            yield prefix + "." + name, hint


def _classes(hint: Any) -> Iterator[type]:
    if inspect.isclass(hint) and hint.__module__.startswith("evaltape"):
        yield hint
    for arg in typing.get_args(hint):
        yield from _classes(arg)


def test_public_types_mention_only_public_types() -> None:
    exported = _exported()
    namespace = _namespace()
    todo: list[tuple[object, str]] = []
    for name in PUBLIC:
        module = importlib.import_module(name)
        todo += [(getattr(module, attr), f"{name}.{attr}") for attr in module.__all__]
    private: dict[str, str] = {}
    seen: set[int] = set()
    while todo:
        obj, where = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for field, hint in _hints(obj, namespace):
            for cls in _classes(hint):
                if id(cls) not in exported:
                    private.setdefault(f"{cls.__module__}.{cls.__qualname__}", where + field)
                todo.append((cls, cls.__qualname__))
    assert len(seen) > 300  # the walk reached the whole public surface
    assert private == {}


def test_the_public_name_counts_are_those_docs_api_md_gives() -> None:
    from pathlib import Path

    api = (Path(__file__).parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    for name in PUBLIC:
        count = len(importlib.import_module(name).__all__)
        assert f"| `{name}` | {count} |" in api, f"docs/api.md: {name} has {count} public names"
