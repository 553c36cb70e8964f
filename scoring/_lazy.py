"""Public names of a room that are imported when first used.

The runner's room is imported by every module in it, so its public names must not
load the whole runner: ``lazy_names`` gives the room a module ``__getattr__`` that
imports each name's module on first use, and a ``__dir__`` that lists them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` of ``package``, whose public names are ``where``'s
    keys, each found in the module its value names (relative to ``package``)."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
