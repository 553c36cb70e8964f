"""The package layout: dependencies point one way, and no two rooms import each other.

Read from the source folders (nothing is imported): every ``import`` and
``from ... import`` of an evaltape module, relative or absolute, outside
``if TYPE_CHECKING:`` blocks, is an arrow from one module to another.  A room is
a package folder (``recorder/tape``, ``scoring/verdicts``); the runner's
sub-packages count as the runner's room.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("recorder", "replay", "scoring")

DECISIONS = (
    "cases",
    "checks",
    "judge",
    "stats",
    "cost",
    "results",
    "verdicts",
    "drafts",
    "sandbox",
)
"""Rooms of ``scoring`` that decide from values: they never import the runner or outputs."""

CROSSING = {
    "evaltape.recorder",
    "evaltape.recorder._shared",
    "evaltape.recorder.redact",
    "evaltape.recorder.script",
    "evaltape.recorder.tape",
    "evaltape.replay",
    "evaltape.replay._shared",
}
"""What one package may import of another: its public root, its public rooms (``script``,
``tape``, ``redact``), or the ``_shared`` module that holds what the siblings use beyond
the public API."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[:2] == ["scoring", "_top"]:
        parts = parts[2:]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(["evaltape", *parts])


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    return hidden


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """Each evaltape module ``name`` imports at run time, with the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    hidden = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + (node.module.split(".") if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in MODULES else target), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


GRAPH = {
    name: sorted({(t, line) for t, line in _imports(name, path) if t.startswith("evaltape.")})
    for name, path in MODULES.items()
}


def _room(module: str) -> str:
    parts = module.split(".")
    while len(parts) > 2 and parts[-1].startswith("_"):
        parts.pop()
    if parts[1:3] == ["scoring", "run"]:
        return "evaltape.scoring.run"
    return ".".join(parts)


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def _arrows() -> Iterator[tuple[str, str, int]]:
    for source, targets in GRAPH.items():
        for target, line in targets:
            if target != "evaltape":
                yield source, target, line


def _where(source: str, line: int) -> str:
    return f"{MODULES[source].relative_to(ROOT)}:{line}"


def test_the_layout_was_read() -> None:
    # A walk that found nothing would pass every rule below.
    assert len(MODULES) > 150
    assert sum(len(t) for t in GRAPH.values()) > 1000
    rooms = {_room(m) for m in MODULES}
    assert {"evaltape.recorder.tape", "evaltape.replay.proxy", "evaltape.scoring.run"} <= rooms


def test_packages_depend_one_way_and_only_on_what_a_sibling_shares() -> None:
    order = {"recorder": 0, "replay": 1, "scoring": 2}
    wrong = []
    for source, target, line in _arrows():
        a, b = _package(source), _package(target)
        if a == b or b not in order:
            continue
        if order[b] > order[a]:
            wrong.append(f"{_where(source, line)}: {a} imports {target}")
        elif target not in CROSSING:
            wrong.append(f"{_where(source, line)}: {target} is private to {b}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("room", DECISIONS)
def test_decisions_never_import_the_runner_the_outputs_or_the_cli(room: str) -> None:
    prefix = f"evaltape.scoring.{room}"
    above = ("evaltape.scoring.run", "evaltape.scoring.outputs", "evaltape.scoring.cli")
    wrong = [
        f"{_where(s, line)}: imports {t}"
        for s, t, line in _arrows()
        if (s == prefix or s.startswith(prefix + ".")) and t.startswith(above)
    ]
    assert MODULES.keys() & {prefix}, f"no room {prefix}"
    assert not wrong, "\n".join(wrong)


def test_the_runner_and_the_outputs_never_import_the_cli() -> None:
    wrong = [
        f"{_where(s, line)}: imports {t}"
        for s, t, line in _arrows()
        if s.startswith(("evaltape.scoring.run", "evaltape.scoring.outputs"))
        and t.startswith("evaltape.scoring.cli")
    ]
    assert not wrong, "\n".join(wrong)


def test_the_runner_uses_only_the_export_of_the_outputs() -> None:
    wrong = [
        f"{_where(s, line)}: imports {t}"
        for s, t, line in _arrows()
        if s.startswith("evaltape.scoring.run")
        and t.startswith("evaltape.scoring.outputs")
        and not t.startswith("evaltape.scoring.outputs.export")
    ]
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_rooms_import_each_other() -> None:
    rooms: dict[str, set[str]] = {}
    for source, target, _ in _arrows():
        a, b = _room(source), _room(target)
        if a != b and b in {_room(m) for m in MODULES} and not b.startswith(a + "."):
            rooms.setdefault(a, set()).add(b)
    assert not _cycles(rooms)


def test_no_two_modules_import_each_other() -> None:
    modules = {s: {t for t, _ in targets if t in MODULES} for s, targets in GRAPH.items()}
    assert not _cycles(modules)
