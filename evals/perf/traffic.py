"""Realistic OpenAI Chat Completions agent traffic, generated from a seed.

A coding agent works on a repository for N turns.  Every turn the model
streams one tool call (server-sent events shaped like OpenAI's: a role chunk,
argument deltas, a finish chunk, a usage chunk and ``data: [DONE]``), the
agent runs the tool and sends the result back, and every request carries the
whole conversation, as the API requires.  Request bodies are serialized the
way the OpenAI Python SDK does it (``json.dumps`` with compact separators,
``ensure_ascii=False``, its key order).

Tool results are real text: the "repository" is a set of packages of the
running Python's standard library, and each result is computed from those
files (numbered file slices, grep hits, symbol outlines, unified diffs, test
listings).  They compress like real agent traffic does, unlike random bytes
or repeated filler.  Output is a pure function of the seed and the standard
library's files (so of the Python version).

The N-turn session is the first N turns of any longer session with the same
seed, so sizes at different N compare like for like.
"""

from __future__ import annotations

import difflib
import email.utils
import json
import os
import random
import re
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from evaltape.recorder import (
    Chunk,
    Exchange,
    Mode,
    Request,
    Response,
    SessionStarted,
    Source,
    open_session,
)

MODEL = "gpt-4o-2024-08-06"
URL = "https://api.openai.com/v1/chat/completions"
STARTED_AT = 1_736_935_200.0
"""Wall-clock start of every generated session (a fixed instant)."""

PACKAGES = (
    "json",
    "email",
    "http",
    "asyncio",
    "logging",
    "importlib",
    "concurrent/futures",
    "urllib",
    "xml/etree",
    "tomllib",
    "wsgiref",
    "unittest",
)
"""Standard-library packages that make up the agent's repository (as ``lib/...``)."""

SYSTEM_PROMPT = """\
You are a software engineering agent working inside a checked-out repository. \
You can read and search files, edit them, and run commands and tests through the \
tools provided. Work step by step: first understand the relevant code, then make \
the smallest change that solves the task, then verify it.

Guidelines:
- Read a file before you edit it. Quote the exact text you want to replace in \
edit_file; include enough surrounding lines to make the match unique.
- Prefer grep and list_symbols over reading whole files. Files can be large; \
read them in slices using offset and limit.
- Keep the existing code style: naming, indentation, docstring conventions and \
import order. Do not reformat code you are not changing.
- Never delete tests to make them pass. If a test is wrong, explain why before \
changing it.
- Run the relevant tests after every change. If they fail, read the failure \
carefully and fix the cause rather than the symptom.
- Commands run in a sandbox without network access. Long-running commands are \
stopped after their timeout.
- When you are done, reply with a short summary of what you changed and why, \
and list the files you touched. Do not call any tool in that final reply.

The repository layout: library code lives under lib/, tests under tests/. \
Python 3.11 is installed; use `python -m pytest` to run tests.
"""

TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file from the repository. Lines are numbered "
            "starting at 1. Use offset and limit to read a slice of a large file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the root."},
                    "offset": {"type": "integer", "description": "First line to read (1-based)."},
                    "limit": {"type": "integer", "description": "Number of lines to read."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "grep",
            "description": "Search file contents with a regular expression and print "
            "matching lines as path:line:text. Results are capped; narrow the path or the "
            "pattern when there are too many.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Python regular expression."},
                    "path": {"type": "string", "description": "Directory or file to search."},
                    "include": {"type": "string", "description": "Glob of file names, e.g. *.py"},
                    "ignore_case": {"type": "boolean"},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_directory",
            "description": "List the entries of a directory with their size in bytes "
            "and line count. Directories end with a slash.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the root."}
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "find_files",
            "description": "Find files whose path matches a glob pattern, sorted by path.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob, e.g. lib/**/*cache*.py"},
                },
                "required": ["pattern"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_symbols",
            "description": "Outline a Python file: classes, functions and methods with "
            "their line numbers and signatures. Cheaper than reading the file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Python file to outline."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace one exact occurrence of old_string with new_string in "
            "a file. Fails if old_string is missing or occurs more than once; include more "
            "context to make it unique. Returns a numbered snippet around the edit.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string", "description": "Exact text to replace."},
                    "new_string": {"type": "string", "description": "Replacement text."},
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create a file or overwrite it completely. Prefer edit_file "
            "for changes to existing files.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string", "description": "Full new file content."},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_command",
            "description": "Run a shell command in the repository root and return its "
            "combined stdout and stderr and exit status. No network access.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 600},
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run pytest on a file or directory and return the verbose "
            "report. Use keyword to select tests by name.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Test file or directory."},
                    "keyword": {"type": "string", "description": "pytest -k expression."},
                    "fail_fast": {"type": "boolean", "description": "Stop at first failure."},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "git_diff",
            "description": "Show the uncommitted changes as a unified diff, for the "
            "whole repository or one path.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Limit the diff to this path."},
                    "context_lines": {"type": "integer", "minimum": 0, "maximum": 20},
                },
                "additionalProperties": False,
            },
        },
    },
)
"""Ten function tools, as an agent harness declares them."""

_BASE_HEADERS: tuple[tuple[str, str], ...] = (
    ("host", "api.openai.com"),
    ("accept-encoding", "gzip, deflate"),
    ("connection", "keep-alive"),
    ("accept", "application/json"),
    ("content-type", "application/json"),
    ("user-agent", "OpenAI/Python 1.54.4"),
    ("x-stainless-lang", "python"),
    ("x-stainless-package-version", "1.54.4"),
    ("x-stainless-os", "Linux"),
    ("x-stainless-arch", "x64"),
    ("x-stainless-runtime", "CPython"),
    ("x-stainless-runtime-version", "3.11.7"),
    ("x-stainless-async", "false"),
    ("x-stainless-retry-count", "0"),
    ("x-stainless-read-timeout", "600"),
)
"""Request headers the OpenAI SDK sends (the API key is never recorded)."""

_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,}\b")
_DEF = re.compile(r"^(\s*)(async def|def|class)\s+(\w+)\s*(\([^)]*\)?)?")
_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]{1,3}|\s+")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@attrs.frozen(kw_only=True)
class AgentSession:
    """A generated session: its header and one exchange per turn."""

    header: SessionStarted
    """The session's header (source: simulated)."""
    exchanges: tuple[Exchange, ...]
    """One streamed Chat Completions exchange per turn."""

    @property
    def end(self) -> float:
        """Session time at which the last response finished."""
        last = self.exchanges[-1] if self.exchanges else None
        return 0.0 if last is None else last.at + last.duration


def dumps(value: Any) -> bytes:
    """JSON bytes as the OpenAI Python SDK sends them."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


class _Repo:
    """The agent's repository: standard-library packages, read once."""

    def __init__(self, root: Path) -> None:
        self.files: dict[str, list[str]] = {}
        self.dirs: dict[str, list[str]] = {}
        for package in PACKAGES:
            folder = f"lib/{package}"
            for file in sorted((root / package).glob("*.py")):
                path = f"{folder}/{file.name}"
                self.files[path] = file.read_text(encoding="utf-8").splitlines()
                self.dirs.setdefault(folder, []).append(path)
        if not self.files:
            raise RuntimeError(f"no standard-library sources under {root}")
        self.paths = sorted(p for p, lines in self.files.items() if len(lines) > 40)


def _stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _fit(lines: Iterator[str] | list[str], budget: int) -> list[str]:
    """Take lines until ``budget`` bytes are used (at least one line)."""
    out: list[str] = []
    used = 0
    for line in lines:
        if out and used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
    return out


def _numbered(lines: list[str], start: int, budget: int) -> tuple[list[str], int]:
    """``cat -n`` style lines from index ``start``; returns them and how many."""
    out = _fit((f"{i + 1:6}\t{lines[i]}" for i in range(start, len(lines))), budget)
    return out, len(out)


def _symbols(lines: list[str]) -> list[tuple[int, str, str, str]]:
    """(line number, kind, name, signature) for each def and class."""
    found = []
    for i, line in enumerate(lines):
        m = _DEF.match(line)
        if m:
            indent, kind, name, sig = m.groups()
            if kind != "class" and indent:
                kind = "method"
            found.append((i + 1, kind, name, sig or ""))
    return found


class _Tools:
    """Computes tool calls and their results from the repository."""

    def __init__(self, repo: _Repo, rng: random.Random) -> None:
        self.repo = repo
        self.rng = rng
        self.focus = rng.choice(repo.paths)
        self.edits = 0

    def pick_path(self) -> str:
        """Mostly the file the agent is working on, sometimes another one."""
        if self.rng.random() < 0.45:
            return self.focus
        path = self.rng.choice(self.repo.paths)
        if self.rng.random() < 0.3:
            self.focus = path
        return path

    def budget(self) -> int:
        return int(self.rng.triangular(700, 2200, 1300))

    def read_file(self) -> tuple[dict[str, Any], str, str]:
        path = self.pick_path()
        lines = self.repo.files[path]
        start = 0 if self.rng.random() < 0.2 else self.rng.randrange(len(lines) - 10)
        out, count = _numbered(lines, start, self.budget())
        args = {"path": path, "offset": start + 1, "limit": max(count, 20)}
        return args, "\n".join(out), f"Let me read `{path}` from line {start + 1}."

    def grep(self) -> tuple[dict[str, Any], str, str]:
        ident, folder, hits = "def", "lib", ["(no matches)"]
        for _ in range(50):
            path = self.pick_path()
            idents = _IDENT.findall(self.rng.choice(self.repo.files[path]))
            if not idents:
                continue
            ident = self.rng.choice(idents)
            folder = path.rsplit("/", 1)[0]
            word = re.compile(rf"\b{re.escape(ident)}\b")
            hits = [
                f"{p}:{i + 1}:{line}"
                for p in self.repo.dirs[folder]
                for i, line in enumerate(self.repo.files[p])
                if word.search(line)
            ]
            if len(hits) >= 3:
                break
        shown = _fit(hits, self.budget())
        if len(shown) < len(hits):
            shown.append(f"[{len(hits) - len(shown)} more matches not shown]")
        args = {"pattern": rf"\b{ident}\b", "path": folder, "include": "*.py"}
        return args, "\n".join(shown), f"I'll look for where `{ident}` is used in {folder}."

    def list_directory(self) -> tuple[dict[str, Any], str, str]:
        folder = self.pick_path().rsplit("/", 1)[0]
        rows = ["__pycache__/"]
        for p in self.repo.dirs[folder]:
            lines = self.repo.files[p]
            size = sum(len(line.encode()) + 1 for line in lines)
            rows.append(f"{p.rsplit('/', 1)[1]:<28}{size:>9} bytes {len(lines):>6} lines")
        return {"path": folder}, "\n".join(rows), f"Let me see what else is in {folder}."

    def find_files(self) -> tuple[dict[str, Any], str, str]:
        stem = self.pick_path().rsplit("/", 1)[1].removesuffix(".py").strip("_")
        part = stem[: max(3, len(stem) // 2)]
        hits = [p for p in sorted(self.repo.files) if part in p.rsplit("/", 1)[1]]
        text = "\n".join(hits) if hits else "No files found."
        return {"pattern": f"lib/**/*{part}*.py"}, text, f"Are there other modules like `{stem}`?"

    def list_symbols(self) -> tuple[dict[str, Any], str, str]:
        path = self.pick_path()
        syms = _symbols(self.repo.files[path])
        start = self.rng.randrange(max(1, len(syms) - 8)) if syms else 0
        rows = _fit((f"{n:>6}  {k:<9} {name}{sig}" for n, k, name, sig in syms[start:]), 1300)
        text = "\n".join(rows) if rows else "(no symbols)"
        return {"path": path}, text, f"Let me get an outline of `{path}` first."

    def _changed(self, line: str) -> str:
        idents = _IDENT.findall(line)
        if idents and self.rng.random() < 0.6:
            ident = self.rng.choice(idents)
            new = self.rng.choice(("checked", "value", "orig", "result", "safe"))
            return line.replace(ident, f"{ident}_{new}", 1)
        indent = line[: len(line) - len(line.lstrip())]
        note = self.rng.choice(("guard against None", "keep the old order", "see the issue"))
        return f"{line}\n{indent}# {note}"

    def _spot(self, path: str) -> int:
        lines = self.repo.files[path]
        for _ in range(50):
            i = self.rng.randrange(5, len(lines) - 5)
            if len(lines[i].strip()) > 20:
                return i
        return len(lines) // 2

    def edit_file(self) -> tuple[dict[str, Any], str, str]:
        path = self.focus
        lines = self.repo.files[path]
        i = self._spot(path)
        old = lines[i : i + self.rng.randint(1, 3)]
        new = [self._changed(old[0]), *old[1:]]
        edited = lines[:i] + "\n".join(new).split("\n") + lines[i + len(old) :]
        lo = max(0, i - 5)
        out, _ = _numbered(edited, lo, self.budget() // 2 + 300)
        header = (
            f"The file {path} has been updated. Here's the result of running `cat -n` "
            "on a snippet of the edited file:"
        )
        args = {"path": path, "old_string": "\n".join(old), "new_string": "\n".join(new)}
        self.edits += 1
        return args, "\n".join([header, *out]), f"Now I'll update line {i + 1} of `{path}`."

    def write_file(self) -> tuple[dict[str, Any], str, str]:
        source = self.pick_path()
        lines = self.repo.files[source]
        syms = [s for s in _symbols(lines) if s[1] != "method"] or [(1, "", "", "")]
        start = self.rng.choice(syms)[0] - 1
        content = "\n".join(_fit(lines[start:], self.budget())) + "\n"
        stem = source.rsplit("/", 1)[1].removesuffix(".py").strip("_")
        path = f"tests/test_{stem}_regression.py"
        text = f"File created successfully at: {path} ({len(content.encode())} bytes)"
        return {"path": path, "content": content}, text, f"I'll add `{path}`."

    def run_command(self) -> tuple[dict[str, Any], str, str]:
        path = self.pick_path()
        lines = self.repo.files[path]
        if self.rng.random() < 0.5:
            folder = path.rsplit("/", 1)[0]
            rows = [f"{len(self.repo.files[p]):>7} {p}" for p in self.repo.dirs[folder]]
            total = sum(len(self.repo.files[p]) for p in self.repo.dirs[folder])
            rows = [*_fit(rows, self.budget()), f"{total:>7} total"]
            command = f"wc -l {folder}/*.py"
        else:
            a = self.rng.randrange(len(lines) - 10)
            rows = _fit(lines[a:], self.budget())
            command = f"sed -n '{a + 1},{a + len(rows)}p' {path}"
        text = "\n".join([*rows, "", "[exit status 0]"])
        return {"command": command, "timeout_seconds": 60}, text, "Let me check quickly."

    def run_tests(self) -> tuple[dict[str, Any], str, str]:
        path = self.focus
        stem = path.rsplit("/", 1)[1].removesuffix(".py").strip("_")
        names = sorted({n.strip("_") for _, k, n, _ in _symbols(self.repo.files[path])})
        names = [n for n in names if n] or [stem]
        picked = sorted(self.rng.sample(names, min(len(names), self.rng.randint(6, 14))))
        test_file = f"tests/test_{stem}.py"
        failing = self.rng.randrange(len(picked)) if self.rng.random() < 0.4 else -1
        rows = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0",
            "rootdir: /workspace",
            f"collected {len(picked)} items",
            "",
        ]
        for j, name in enumerate(picked):
            verdict = "FAILED" if j == failing else "PASSED"
            pct = f"[{100 * (j + 1) // len(picked):>3}%]"
            rows.append(f"{test_file}::test_{name} {verdict}".ljust(72) + pct)
        if failing >= 0:
            i = self._spot(path)
            source = self.repo.files[path]
            rows += [
                "",
                f"_____ test_{picked[failing]} _____",
                f"{path}:{i + 1}: in {picked[failing]}",
                *(f"    {line}" for line in source[i - 2 : i]),
                f">   {source[i]}",
                f"E   AssertionError: expected {self.rng.randint(2, 99)} items",
                f"FAILED {test_file}::test_{picked[failing]} - AssertionError",
            ]
        passed = len(picked) - (failing >= 0)
        summary = f"{passed} passed" + (", 1 failed" if failing >= 0 else "")
        secs = self.rng.uniform(0.05, 3.0)
        rows.append(f"{'=' * 25} {summary} in {secs:.2f}s {'=' * 25}")
        args = {"path": test_file, "fail_fast": self.rng.random() < 0.3}
        return args, "\n".join(rows), f"Let me run the tests in `{test_file}`."

    def git_diff(self) -> tuple[dict[str, Any], str, str]:
        path = self.focus
        lines = self.repo.files[path]
        i = self._spot(path)
        changed = [*lines[:i], *self._changed(lines[i]).split("\n"), *lines[i + 1 :]]
        lo, hi = max(0, i - 6), min(len(lines), i + 6)
        body = difflib.unified_diff(
            lines[lo:hi], changed[lo : hi + 1], f"a/{path}", f"b/{path}", lineterm="", n=3
        )
        index = f"index {self.rng.getrandbits(28):07x}..{self.rng.getrandbits(28):07x} 100644"
        text = "\n".join([f"diff --git a/{path} b/{path}", index, *body])
        return {"path": path}, text, "Let me review the change so far."


_WEIGHTED: tuple[tuple[str, int], ...] = (
    ("read_file", 30),
    ("grep", 18),
    ("edit_file", 12),
    ("run_tests", 10),
    ("list_symbols", 8),
    ("run_command", 7),
    ("list_directory", 4),
    ("git_diff", 5),
    ("find_files", 3),
    ("write_file", 3),
)


def _random_id(rng: random.Random, prefix: str, n: int) -> str:
    return prefix + "".join(rng.choice(_ALNUM) for _ in range(n))


def _tokens(text: str) -> list[str]:
    """Split text into token-sized pieces, as a model streams them."""
    return _TOKEN.findall(text) or [text]


def _stream(
    rng: random.Random,
    *,
    content: str | None,
    call: dict[str, Any],
    body: bytes,
    cached: int,
    created: int,
) -> tuple[tuple[Chunk, ...], int]:
    """The SSE chunks of one streamed tool-call answer, and its prompt tokens."""
    envelope = {
        "id": _random_id(rng, "chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL,
        "service_tier": "default",
        "system_fingerprint": "fp_f9f4fb6dbf",
    }
    events: list[dict[str, Any]] = []

    def delta(d: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}
        events.append({**envelope, "choices": [choice], "usage": None})

    start = {
        "index": 0,
        "id": call["id"],
        "type": "function",
        "function": {"name": call["function"]["name"], "arguments": ""},
    }
    if content:
        delta({"role": "assistant", "content": "", "refusal": None})
        for token in _tokens(content):
            delta({"content": token})
        delta({"tool_calls": [start]})
    else:
        delta({"role": "assistant", "content": None, "tool_calls": [start], "refusal": None})
    pieces = _tokens(call["function"]["arguments"])
    for piece in pieces:
        delta({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    delta({}, "tool_calls")
    prompt = int(len(body) / 3.7)
    completion = len(pieces) + (len(_tokens(content)) if content else 0) + 4
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    events.append({**envelope, "choices": [], "usage": usage})
    at = rng.uniform(0.25, 0.9)
    chunks = []
    for event in events:
        chunks.append(Chunk(at=at, data=b"data: " + dumps(event) + b"\n\n"))
        at += rng.uniform(0.004, 0.03)
    chunks.append(Chunk(at=at, data=b"data: [DONE]\n\n"))
    return tuple(chunks), prompt


def _response_headers(
    rng: random.Random, when: float, ms: int, prompt: int
) -> tuple[tuple[str, str], ...]:
    return (
        ("date", email.utils.formatdate(when, usegmt=True)),
        ("content-type", "text/event-stream; charset=utf-8"),
        ("transfer-encoding", "chunked"),
        ("connection", "keep-alive"),
        ("access-control-expose-headers", "X-Request-ID"),
        ("openai-organization", "user-perfbench"),
        ("openai-processing-ms", str(ms)),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "30000000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-remaining-tokens", str(30_000_000 - prompt)),
        ("x-ratelimit-reset-requests", "6ms"),
        ("x-ratelimit-reset-tokens", f"{max(1, prompt // 25_000)}ms"),
        ("x-request-id", f"req_{rng.getrandbits(128):032x}"),
        ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
        ("cf-cache-status", "DYNAMIC"),
        ("x-content-type-options", "nosniff"),
        ("server", "cloudflare"),
        ("cf-ray", f"{rng.getrandbits(64):016x}-SJC"),
        ("alt-svc", 'h3=":443"; ma=86400'),
    )


def _task(rng: random.Random, tools: _Tools) -> str:
    path = tools.focus
    syms = [s for s in _symbols(tools.repo.files[path]) if s[1] != "class"]
    name = rng.choice(syms)[2] if syms else "the module"
    return (
        f"`{name}` in `{path}` misbehaves when it is called with an empty or partially "
        "initialised input: instead of returning a sensible default it raises deep inside "
        "the call chain, and the traceback does not say which argument was wrong. Find the "
        "cause, fix it with the smallest reasonable change, add a regression test under "
        "tests/, and make sure the existing tests still pass."
    )


def agent_session(turns: int, *, seed: int = 0, stdlib: Path | None = None) -> AgentSession:
    """Generate an agent session of ``turns`` streamed tool-call exchanges."""
    rng = random.Random(seed)
    session_id = f"{rng.getrandbits(64):016x}"
    tools = _Tools(_Repo(stdlib or _stdlib()), rng)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": _task(rng, tools)},
    ]
    names = [name for name, _ in _WEIGHTED]
    weights = [w for _, w in _WEIGHTED]
    exchanges = []
    now = rng.uniform(0.05, 0.2)
    cached = 0
    for _ in range(turns):
        params = {
            "model": MODEL,
            "stream": True,
            "messages": messages,
            "parallel_tool_calls": False,
            "stream_options": {"include_usage": True},
            "temperature": 0.2,
            "tool_choice": "auto",
            "tools": list(TOOLS),
        }
        body = dumps(params)
        name = rng.choices(names, weights)[0]
        run: Callable[[], tuple[dict[str, Any], str, str]] = getattr(tools, name)
        args, result, remark = run()
        content = remark if rng.random() < 0.35 else None
        call = {
            "id": _random_id(rng, "call_", 24),
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        chunks, prompt = _stream(
            rng, content=content, call=call, body=body, cached=cached, created=int(STARTED_AT + now)
        )
        cached = prompt // 128 * 128
        headers = _response_headers(rng, STARTED_AT + now, int(chunks[0].at * 1000), prompt)
        duration = chunks[-1].at + rng.uniform(0.0005, 0.003)
        exchanges.append(
            Exchange(
                at=now,
                duration=duration,
                request=Request(
                    method="POST",
                    url=URL,
                    headers=(*_BASE_HEADERS, ("content-length", str(len(body)))),
                    body=body,
                ),
                response=Response(status=200, headers=headers, chunks=chunks, streamed=True),
            )
        )
        messages = [
            *messages,
            {"role": "assistant", "content": content, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": result},
        ]
        now += duration + rng.uniform(0.02, 1.5)
    header = SessionStarted(
        session_id=session_id,
        started_at=STARTED_AT,
        case_id=f"perf/agent-{turns}-turns",
        model=MODEL,
        mode=Mode.LIVE,
        source=Source.SIMULATED,
        source_detail=f"evals/perf/traffic.py seed={seed}",
        seed=seed,
    )
    return AgentSession(header=header, exchanges=tuple(exchanges))


def write_session(
    path: str | os.PathLike[str], session: AgentSession, *, level: int | None = None
) -> None:
    """Append ``session`` to the tape at ``path`` with ``open_session``."""
    end = session.end

    def clock() -> float:
        return end

    extra = {} if level is None else {"level": level}
    with open_session(path, session.header, clock=clock, **extra) as tape:
        for exchange in session.exchanges:
            tape.append(exchange)
