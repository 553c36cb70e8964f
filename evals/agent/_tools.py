"""The agent's tools, confined to the workspace: read, write, edit, grep, glob, ls, bash.

Every path is resolved (symlinks included) and refused unless it lies inside
the workspace.  Writes are refused in the non-mutating modes ``plan`` and
``read-only``; commands run only in ``build`` and ``danger`` (and the
default mode, which is ``build``).  A refusal or failure is not an
exception: it comes back as the tool's result, so the model can recover.
Outputs never show the workspace's absolute path (it differs between a
recording and its replay), and are cut to a fixed size.  ``bash`` runs in the
task's sandbox (``evaltape.scoring.sandbox.Sandbox``): no network, the workspace the
only writable path, no API keys in its environment.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from evaltape.scoring import Answer, Question, QuestionKind
from evaltape.scoring.sandbox import Sandbox

MUTATING_MODES = frozenset({"edit", "build", "danger"})
"""Modes that may change files."""
COMMAND_MODES = frozenset({"build", "danger"})
"""Modes that may run shell commands."""
DEFAULT_MODE = "build"
"""The mode used when a case names none."""
MAX_MATCHES = 100
"""grep stops after this many matching lines."""
MAX_ENTRIES = 200
"""glob and ls list at most this many paths."""
LINE_CUT = 240
"""grep shows at most this many characters of a matching line."""
MAX_FILE_BYTES = 1024 * 1024
"""read, edit and grep take at most this many bytes of one file (read and grep say
when they stopped short; edit refuses a larger file), so a huge or sparse file the
model made cannot make the harness hold it all."""
MAX_GREP_BYTES = 16 * 1024 * 1024
"""grep scans at most this many bytes in one call, over all files, then stops and says so."""


class Outcome(enum.Enum):
    """How a tool call ended, as logged."""

    OK = "ok"
    """The tool did its job."""
    ERROR = "error"
    """Bad arguments, a missing file, a failing or timed-out command."""
    REFUSED = "refused"
    """The mode or the workspace boundary forbade it."""


@attrs.frozen(kw_only=True)
class ToolResult:
    """What a tool sends back to the model."""

    text: str
    """The result as the model reads it."""
    outcome: Outcome
    """How the call ended."""


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    """Function name."""
    description: str
    """One or two sentences for the model."""
    parameters: Mapping[str, Any]
    """JSON Schema of the arguments (an object)."""

    def as_openai(self) -> dict[str, Any]:
        """The tool in Chat Completions' ``tools`` shape."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


def _schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_STR = {"type": "string"}
_INT = {"type": "integer"}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="read",
        description="Read a text file of the workspace. Optional start line and line count.",
        parameters=_schema(["path"], path=_STR, start_line=_INT, max_lines=_INT),
    ),
    ToolSpec(
        name="write",
        description="Create or overwrite a file of the workspace with the given content.",
        parameters=_schema(["path", "content"], path=_STR, content=_STR),
    ),
    ToolSpec(
        name="edit",
        description="Replace the exact text `old` (it must occur once) by `new` in a file.",
        parameters=_schema(["path", "old", "new"], path=_STR, old=_STR, new=_STR),
    ),
    ToolSpec(
        name="grep",
        description="Search file contents for a regular expression; shows path:line: text.",
        parameters=_schema(["pattern"], pattern=_STR, path=_STR, glob=_STR),
    ),
    ToolSpec(
        name="glob",
        description="List files whose path matches a glob pattern such as **/*.py.",
        parameters=_schema(["pattern"], pattern=_STR),
    ),
    ToolSpec(
        name="ls",
        description="List the entries of a folder of the workspace (folders end with /).",
        parameters=_schema([], path=_STR),
    ),
    ToolSpec(
        name="bash",
        description="Run a shell command in the workspace folder; shows exit code and output.",
        parameters=_schema(["command"], command=_STR),
    ),
)
"""Every tool, in the order the model is shown them."""

TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)
"""Names of every tool."""


class _Refused(Exception):
    """Raised inside a tool to refuse the call; the message goes to the model."""


class _Failed(Exception):
    """Raised inside a tool when it cannot do the job; the message goes to the model."""


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


def _read_bounded(real: str, rel: str, limit: int) -> tuple[bytes, int]:
    """The first ``limit`` bytes of a regular file and its size.

    A FIFO, device or socket is refused from its ``stat`` and opened
    non-blocking, so a FIFO with no writer can never hold the harness; the
    opened file is checked again in case the path was swapped in between.
    """
    if not stat.S_ISREG(os.stat(real).st_mode):
        raise _Failed(f"{rel} is not a regular file")
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Failed(f"{rel} is not a regular file")
        return f.read(limit), info.st_size


class Workspace:
    """Runs tools against one attempt's workspace folder under one agent mode."""

    def __init__(
        self,
        root: Path,
        *,
        mode: str | None,
        ask: Callable[[Question], Answer],
        bash_timeout: float,
        output_limit: int,
        sandbox: Sandbox | None = None,
    ) -> None:
        self._root = os.path.realpath(root)
        self._given = os.path.abspath(root)
        self._mode = mode or DEFAULT_MODE
        self._ask = ask
        self._bash_timeout = bash_timeout
        self._limit = output_limit
        self._sandbox = sandbox if sandbox is not None else Sandbox.find()
        self._tools: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "read": self._read,
            "write": self._write,
            "edit": self._edit,
            "grep": self._grep,
            "glob": self._glob,
            "ls": self._ls,
            "bash": self._bash,
        }

    @property
    def mode(self) -> str:
        """The agent mode in force."""
        return self._mode

    def run(self, name: str, args: Mapping[str, Any]) -> ToolResult:
        """Run tool ``name``; refusals and failures come back as results, never raise."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(TOOL_NAMES)
            return ToolResult(
                text=f"error: no tool {name!r} (tools: {known})", outcome=Outcome.ERROR
            )
        try:
            text = tool(args)
        except _Refused as exc:
            text, outcome = f"refused: {exc}", Outcome.REFUSED
        except (_Failed, OSError, ValueError) as exc:
            text, outcome = f"error: {exc}", Outcome.ERROR
        else:
            outcome = Outcome.OK
        return ToolResult(text=_cut(self._hide(text), self._limit), outcome=outcome)

    # -- helpers ----------------------------------------------------------------

    def _hide(self, text: str) -> str:
        """Replace the workspace's absolute path by "." (it differs on every run)."""
        for root in sorted({self._root, self._given}, key=len, reverse=True):
            text = text.replace(root, ".")
        return text

    def _rel(self, real: str) -> str:
        rel = os.path.relpath(real, self._root)
        return "." if rel == "." else rel.replace(os.sep, "/")

    def _path(self, args: Mapping[str, Any], key: str = "path", default: str | None = None) -> str:
        """The real path an argument names, refused when it is outside the workspace."""
        raw = args.get(key, default)
        if not isinstance(raw, str) or not raw.strip():
            raise _Failed(f'argument "{key}" must be a non-empty string')
        raw = raw.strip()
        real = os.path.realpath(os.path.join(self._root, raw))
        if real != self._root and not real.startswith(self._root + os.sep):
            raise _Refused(f"{raw} is outside the workspace")
        return real

    def _text(self, args: Mapping[str, Any], key: str) -> str:
        value = args.get(key)
        if not isinstance(value, str):
            raise _Failed(f'argument "{key}" must be a string')
        return value

    def _line_arg(self, args: Mapping[str, Any], key: str) -> int | None:
        value = args.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _Failed(f'argument "{key}" must be a positive integer')
        return value

    def _may_write(self, real: str, action: str) -> None:
        if self._mode not in MUTATING_MODES:
            raise _Refused(f"{action} is not allowed in {self._mode} mode (files are read-only)")
        if self._mode == "danger":
            return
        question = Question(kind=QuestionKind.PERMISSION, text=action, path=self._rel(real))
        answer = self._ask(question)
        if not answer.granted:
            raise _Refused(self._hide(answer.text))

    # -- the tools ----------------------------------------------------------------

    def _read(self, args: Mapping[str, Any]) -> str:
        real = self._path(args)
        start = self._line_arg(args, "start_line") or 1
        count = self._line_arg(args, "max_lines")
        if os.path.isdir(real):
            raise _Failed(f"{self._rel(real)} is a folder; use ls")
        if not os.path.exists(real):
            raise _Failed(f"no such file: {self._rel(real)}")
        data, size = _read_bounded(real, self._rel(real), MAX_FILE_BYTES)
        lines = data.decode("utf-8", "replace").splitlines(keepends=True)
        end = len(lines) if count is None else start - 1 + count
        text = "".join(lines[start - 1 : end]) or "(empty)"
        if size > len(data):
            text += (
                f"\n[read stopped after the first {len(data)} of {size} bytes "
                f"of {self._rel(real)}; the tools read at most {MAX_FILE_BYTES} bytes of a file]"
            )
        return text

    def _write(self, args: Mapping[str, Any]) -> str:
        real = self._path(args)
        content = self._text(args, "content")
        self._may_write(real, f"write {self._rel(real)}")
        if os.path.isdir(real):
            raise _Failed(f"{self._rel(real)} is a folder")
        os.makedirs(os.path.dirname(real), exist_ok=True)
        data = content.encode("utf-8")
        with open(real, "wb") as f:
            f.write(data)
        return f"wrote {len(data)} bytes to {self._rel(real)}"

    def _edit(self, args: Mapping[str, Any]) -> str:
        real = self._path(args)
        old = self._text(args, "old")
        new = self._text(args, "new")
        self._may_write(real, f"edit {self._rel(real)}")
        if not os.path.isfile(real):
            raise _Failed(f"no such file: {self._rel(real)}")
        if not old:
            raise _Failed('argument "old" must not be empty')
        data, size = _read_bounded(real, self._rel(real), MAX_FILE_BYTES + 1)
        if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
            raise _Failed(
                f"{self._rel(real)} is {size} bytes; edit changes files of at most "
                f"{MAX_FILE_BYTES} bytes"
            )
        text = data.decode("utf-8")
        found = text.count(old)
        if found != 1:
            where = "does not occur" if not found else f"occurs {found} times"
            raise _Failed(f"the old text {where} in {self._rel(real)}; it must occur exactly once")
        with open(real, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))
        return f"edited {self._rel(real)}"

    def _files(self, top: str) -> list[str]:
        """Regular files under ``top`` (real paths inside the workspace), sorted, no .git."""
        if os.path.isfile(top):
            return [top]
        out: list[str] = []
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(names):
                real = os.path.realpath(os.path.join(folder, name))
                if real.startswith(self._root + os.sep) and os.path.isfile(real):
                    out.append(real)
        return out

    def _grep(self, args: Mapping[str, Any]) -> str:
        pattern = self._text(args, "pattern")
        top = self._path(args, default=".")
        name_glob = args.get("glob")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise _Failed(f"invalid regular expression {pattern!r}: {exc}") from None
        hits: list[str] = []
        notes: list[str] = []
        budget = MAX_GREP_BYTES
        for real in self._files(top):
            rel = self._rel(real)
            if (
                isinstance(name_glob, str)
                and name_glob
                and not (
                    fnmatch.fnmatch(rel, name_glob)
                    or fnmatch.fnmatch(os.path.basename(rel), name_glob)
                )
            ):
                continue
            if budget <= 0:
                notes.append(
                    f"[stopped after scanning {MAX_GREP_BYTES} bytes; narrow path or glob]"
                )
                break
            try:
                data, size = _read_bounded(real, rel, min(MAX_FILE_BYTES, budget))
            except _Failed:
                continue
            budget -= len(data)
            if b"\0" in data:
                continue
            if size > len(data):
                notes.append(f"[{rel}: searched the first {len(data)} of {size} bytes]")
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{rel}:{number}: {line[:LINE_CUT]}")
                    if len(hits) >= MAX_MATCHES:
                        return "\n".join([*hits, *notes, f"[stopped after {MAX_MATCHES} matches]"])
        return "\n".join([*(hits or ["no matches"]), *notes])

    def _glob(self, args: Mapping[str, Any]) -> str:
        pattern = self._text(args, "pattern").strip()
        if not pattern:
            raise _Failed('argument "pattern" must not be empty')
        if os.path.isabs(pattern) or ".." in pattern.split("/"):
            raise _Refused(f"{pattern} reaches outside the workspace")
        found = sorted(
            self._rel(real)
            for real in {os.path.realpath(p) for p in Path(self._root).glob(pattern)}
            if real.startswith(self._root + os.sep) and os.path.isfile(real)
        )
        if not found:
            return "no files match"
        more = len(found) - MAX_ENTRIES
        listed = found[:MAX_ENTRIES]
        return "\n".join(listed + ([f"[{more} more]"] if more > 0 else []))

    def _ls(self, args: Mapping[str, Any]) -> str:
        real = self._path(args, default=".")
        if not os.path.isdir(real):
            raise _Failed(f"not a folder: {self._rel(real)}")
        entries = sorted(
            name + ("/" if os.path.isdir(os.path.join(real, name)) else "")
            for name in os.listdir(real)
        )
        if not entries:
            return "(empty folder)"
        return "\n".join(entries[:MAX_ENTRIES])

    def _bash(self, args: Mapping[str, Any]) -> str:
        command = self._text(args, "command")
        if self._mode not in COMMAND_MODES:
            raise _Refused(f"running commands is not allowed in {self._mode} mode")
        result = self._sandbox.run(
            ["bash", "-c", command],
            workspace=self._root,
            timeout=self._bash_timeout,
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )
        if result.timed_out:
            raise _Failed(
                f"command timed out after {self._bash_timeout:g}s and was killed\n{result.output}"
            )
        return f"exit code {result.exit_code}\n{result.output}"
