"""Every ``from evaltape... import ...`` in the documentation's code blocks imports.

Docs name only what users can import; a name dropped from a package's surface
must leave the examples too.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])
IMPORT = re.compile(r"^from (evaltape[\w.]*) import (\([^)]*\)|[^\n]+)", re.MULTILINE)


def blocks(text: str) -> list[str]:
    """The bodies of the fenced code blocks of a Markdown text."""
    out: list[str] = []
    body: list[str] | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if body is None:
                body = []
            else:
                out.append("\n".join(body))
                body = None
        elif body is not None:
            body.append(line)
    return out


def imports() -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for block in blocks(doc.read_text()):
            for module, names in IMPORT.findall(block):
                for name in re.split(r"[\s,()]+", names.split("#")[0]):
                    if name and name != "as":
                        found.append((doc.name, module, name))
    return found


@pytest.mark.parametrize(("doc", "module", "name"), imports())
def test_a_documented_import_works(doc: str, module: str, name: str) -> None:
    imported = importlib.import_module(module)
    public = getattr(imported, "__all__", None)
    assert not module.split(".")[-1].startswith("_"), f"{doc}: {module} is private"
    assert hasattr(imported, name), f"{doc}: {module} has no {name}"
    assert public is None or name in public, f"{doc}: {name} is not public in {module}"
