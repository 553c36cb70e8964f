"""The standard mutations and where they go in an agent's source.

A tool is a function or method named for it (``write``, ``_write`` or
``__write`` for the tool ``write``).  Each operator finds its sites inside
tool functions only, and each site is one mutation: the module is parsed,
the one node changed, and the module written back with ``ast.unparse`` (its
comments are lost; its meaning, but for the mutation, is kept).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import attrs

OPERATORS: tuple[tuple[str, str], ...] = (
    ("drop-last-byte", "a write loses its last byte"),
    ("skip-write", "a write is not done"),
    ("empty-result", "the tool returns an empty result"),
    ("reverse-listing", "a sorted listing comes back in reverse order"),
)
"""Every operator: its name and what the planted bug does, in the order they are tried."""

WRITES = frozenset({"write", "write_text", "write_bytes"})
"""Method names that write: ``f.write(data)``, ``path.write_text(text)``."""


@attrs.frozen(kw_only=True)
class Mutation:
    """One planted bug: an operator at one site of one tool."""

    operator: str
    """One of ``OPERATORS``' names."""
    tool: str
    """The tool whose function holds the site."""
    path: str
    """The module, relative to the agent's package folder."""
    line: int
    """The line of the site in the original source."""

    @property
    def label(self) -> str:
        """``write: a write loses its last byte (_tools.py:312)``."""
        what = dict(OPERATORS)[self.operator]
        return f"{self.tool}: {what} ({self.path}:{self.line})"


def _writes(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITES
        and bool(node.args)
    )


def _sorted(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "sorted"
        and not any(k.arg == "reverse" for k in node.keywords)
    )


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _tools(tree: ast.Module, tools: Collection[str]) -> Iterator[tuple[str, Function]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = node.name.lstrip("_")
            if name in tools:
                yield name, node


def _sites(tree: ast.Module, tools: Collection[str]) -> list[tuple[str, str, ast.AST]]:
    """(operator, tool, node) of every site, in a fixed order."""
    found: list[tuple[str, str, ast.AST]] = []
    for tool, function in _tools(tree, tools):
        nodes = list(ast.walk(function))
        found += [("drop-last-byte", tool, n) for n in nodes if _writes(n)]
        found += [
            ("skip-write", tool, n) for n in nodes if isinstance(n, ast.Expr) and _writes(n.value)
        ]
        if any(isinstance(n, ast.Return) and n.value is not None for n in nodes):
            found.append(("empty-result", tool, function))
        found += [("reverse-listing", tool, n) for n in nodes if _sorted(n)]
    order = {name: i for i, (name, _) in enumerate(OPERATORS)}
    return sorted(found, key=lambda s: (s[1], order[s[0]], getattr(s[2], "lineno", 0)))


def _plant(operator: str, node: ast.AST) -> None:
    if operator == "drop-last-byte":
        assert isinstance(node, ast.Call)
        cut = ast.Slice(upper=ast.UnaryOp(op=ast.USub(), operand=ast.Constant(1)))
        node.args[0] = ast.Subscript(value=node.args[0], slice=cut, ctx=ast.Load())
    elif operator == "skip-write":
        assert isinstance(node, ast.Expr)
        node.value = ast.Constant(None)
    elif operator == "empty-result":
        for inner in ast.walk(node):
            if isinstance(inner, ast.Return) and inner.value is not None:
                inner.value = ast.Constant("")
    else:
        assert isinstance(node, ast.Call)
        node.keywords.append(ast.keyword(arg="reverse", value=ast.Constant(True)))


def find_mutations(
    root: Path, tools: Collection[str], files: Iterable[Path] = ()
) -> list[Mutation]:
    """Every mutation of the tools' functions in ``files`` (default: the ``*.py`` files
    under ``root``), each path taken relative to ``root``; a site is listed once.

    Raises ``SyntaxError`` or ``OSError`` for a module that cannot be read.
    """
    out: dict[Mutation, None] = {}
    for path in sorted(files) or sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root).as_posix()
        for operator, tool, node in _sites(tree, tools):
            line = getattr(node, "lineno", 0)
            out[Mutation(operator=operator, tool=tool, path=rel, line=line)] = None
    return list(out)


def mutated_source(source: str, mutation: Mutation, tools: Collection[str]) -> str:
    """``source`` (the module ``mutation.path``) with the one mutation planted."""
    tree = ast.parse(source)
    planted = copy.deepcopy(tree)
    for (operator, tool, node), (_, _, twin) in zip(
        _sites(tree, tools), _sites(planted, tools), strict=True
    ):
        if (operator, tool, getattr(node, "lineno", 0)) == (
            mutation.operator,
            mutation.tool,
            mutation.line,
        ):
            _plant(operator, twin)
            return ast.unparse(ast.fix_missing_locations(planted)) + "\n"
    raise ValueError(f"no site for {mutation.label}")
