"""Outcome scoring: the end state of a coding case's sandbox, rescored from the tape.

The session's recorded workspace snapshot is written to a fresh temporary
folder, so a verdict needs nothing but the tape: no sandbox has to survive
the attempt.  Then, in order:

1. ``workspace``: the snapshot holds every file the case needs (the case's
   own ``files``) and no path escapes the folder;
2. ``immutable``: each immutable file's bytes equal the case's original
   content, checked before anything runs (an agent that rewrites the checker
   until it passes has fixed nothing);
3. ``verify``: the command exits 0 in that folder within its timeout, run in
   the sandbox (``evaltape.replay.Sandbox``: no network, the folder the only
   writable path, no API keys in its environment); the snapshot came from a
   tape, and a tape may come from a stranger.

A failed ``verify`` is reported with the most informative line of its output
(``informative_line``), not the last one.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from evaltape.recorder import FileEntry, Session
from evaltape.recorder._shared import plain_path

from ..cases._cases import Case
from ..sandbox import Sandbox
from ._score import Check

MAX_SNAPSHOT_FILES = 10_000
"""Most files a workspace snapshot may hold for its check to restore it; a recording keeps
no more (later files are listed as omitted), so only a hostile tape holds more, and its
check fails with one line instead of writing every file."""

_LINE_LIMIT = 200
"""Characters of the informative line kept in a reason."""
_SHOWN = 80
"""Characters of the verify command quoted in a reason."""


def outcome_checks(
    case: Case,
    session: Session,
    *,
    verify_timeout: float = 60.0,
    sandbox: Sandbox | None = None,
) -> tuple[Check, ...]:
    """Check the sandbox's end state; empty when the case has no ``verify`` or ``immutable``.

    ``verify_timeout`` applies when the case gives no ``verifyTimeout``.  The
    command runs in ``sandbox`` (default ``Sandbox.find()``: confined, and a
    ``SandboxError`` when bubblewrap is missing).
    """
    if case.verify is None and not case.immutable:
        return ()
    files = case.files if case.files is not None else {}
    snapshot = {entry.path: entry for entry in session.workspace}
    problem = _snapshot_problem(tuple(files), snapshot, session)
    if problem is not None:
        return (Check(name="workspace", passed=False, detail=problem),)
    with tempfile.TemporaryDirectory(
        prefix="evaltape-verify-", ignore_cleanup_errors=True
    ) as scratch:
        root = Path(scratch)
        try:
            _materialize(root / "work", session.workspace)
        except OSError as exc:
            detail = f"cannot restore the workspace snapshot: {exc.strerror or exc}"
            return (Check(name="workspace", passed=False, detail=detail),)
        restored = f"{len(snapshot)} file{'' if len(snapshot) == 1 else 's'} restored"
        if session.workspace_redacted:
            restored += redacted_note(session.workspace_redacted)
        checks = [Check(name="workspace", passed=True, detail=restored)]
        for path in case.immutable:
            entry = snapshot.get(path)
            if entry is None:
                checks.append(Check(name="immutable", passed=False, detail=f"{path} was deleted"))
                return tuple(checks)
            if not same_but_masked(entry.data, files[path].encode("utf-8"), path, session):
                checks.append(Check(name="immutable", passed=False, detail=f"{path} was modified"))
                return tuple(checks)
        if case.immutable:
            detail = f"{', '.join(case.immutable)} unchanged"
            checks.append(Check(name="immutable", passed=True, detail=detail))
        if case.verify is not None:
            timeout = case.verify_timeout if case.verify_timeout is not None else verify_timeout
            chosen = sandbox if sandbox is not None else Sandbox.find()
            checks.append(
                _verify(
                    case.verify,
                    root,
                    timeout,
                    session.workspace_omitted,
                    chosen,
                    expect=case.verify_expect,
                )
            )
        return tuple(checks)


def _snapshot_problem(
    needed: tuple[str, ...], snapshot: dict[str, FileEntry], session: Session
) -> str | None:
    """Why the snapshot cannot stand in for the sandbox, or None if it can."""
    if len(session.workspace) > MAX_SNAPSHOT_FILES:
        return (
            f"the workspace snapshot holds {len(session.workspace)} files, over the "
            f"{MAX_SNAPSHOT_FILES} a check restores; not restored"
        )
    if needed and not snapshot and not session.workspace_omitted:
        return "the session recorded no workspace snapshot; nothing to check"
    omitted = [p for p in needed if p in session.workspace_omitted]
    if omitted:
        return (
            f"the workspace snapshot left out {', '.join(omitted)}"
            " (not a regular file, or over its size limits); cannot check it offline"
        )
    for path in snapshot:
        if not _inside(path):
            return f"the workspace snapshot has a path outside the sandbox: {path!r}"
    plain: set[str] = set()
    for entry in session.workspace:
        if not plain_path(entry.path) or entry.path in plain:
            return f"the workspace snapshot names a file twice or by an alias: {entry.path!r}"
        plain.add(entry.path)
    return None


def _inside(path: str) -> bool:
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        return False
    return ".." not in path.split("/") and posixpath.normpath(path) not in (".", "")


def _verify(
    command: str | tuple[str, ...],
    root: Path,
    timeout: float,
    omitted: Sequence[str],
    sandbox: Sandbox,
    *,
    expect: str | None = None,
) -> Check:
    """Run ``command`` in ``root/work``, the restored workspace; ``root`` is scratch space."""
    work, tools = root / "work", root / "bin"
    tools.mkdir()
    _link_python(tools)
    env = {
        "PATH": os.pathsep.join([str(tools), sandbox.path]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if not sandbox.confined:
        home = root / "home"
        home.mkdir()
        env.update(HOME=str(home), TMPDIR=str(home))
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    shown = command if isinstance(command, str) else shlex.join(command)
    shown = " ".join(shown.split())
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    confined = attrs.evolve(
        sandbox,
        policy=attrs.evolve(sandbox.policy, read_only=(*sandbox.policy.read_only, str(tools))),
    )
    try:
        result = confined.run(argv, workspace=work, timeout=timeout, env=env)
    except OSError as exc:
        detail = f"verify could not start {argv[0]!r}: {exc.strerror or exc}"
        return Check(name="verify", passed=False, detail=detail)
    if result.timed_out:
        return Check(
            name="verify", passed=False, detail=f"verify timed out after {timeout:g}s: {shown}"
        )
    code = result.exit_code
    last = _last_line(result.output)
    if code == 0 and expect is not None and last != expect.strip():
        said = f"its last line was {last[:_LINE_LIMIT]!r}" if last else "it printed nothing"
        detail = f"verify exited 0 but did not print {expect.strip()!r} last ({said}): {shown}"
        return Check(name="verify", passed=False, detail=detail)
    if code == 0:
        return Check(name="verify", passed=True, detail=f"verify exited 0: {shown}")
    line = informative_line(result.output)
    status = f"verify killed by signal {-code}" if code < 0 else f"verify exited {code}"
    detail = f"{status}: {line}" if line else f"{status} with no output"
    if omitted:
        detail += f" (the snapshot left out {', '.join(omitted)})"
    return Check(name="verify", passed=False, detail=detail)


def _last_line(output: str) -> str:
    """The last non-empty line of ``output``, stripped."""
    for line in reversed(output.splitlines()):
        if line.strip():
            return line.strip()
    return ""


def _materialize(root: Path, workspace: Sequence[FileEntry]) -> None:
    root.mkdir()
    for entry in workspace:
        target = root.joinpath(*entry.path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.data)
        target.chmod(entry.mode & 0o777 | 0o600)


def _link_python(folder: Path) -> None:
    """Make ``python`` and ``python3`` in ``folder`` run this interpreter.

    Small scripts rather than symlinks: a symlink to a virtual environment's
    interpreter outside that environment loses the environment's packages.
    """
    script = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n'
    for name in ("python", "python3"):
        path = folder / name
        path.write_text(script, encoding="utf-8")
        path.chmod(0o755)


_NOISE = re.compile(
    r"""^(?:
        Traceback\ \(most\ recent\ call\ last\):
      | File\ ".*",\ line\ \d+.*
      | During\ handling\ of\ the\ above\ exception.*
      | The\ above\ exception\ was\ the\ direct\ cause.*
      | [~^\s]+
      | at\ .*:\d+:\d+\)?
      | node:[\w/.-]+(?::\d+)*
      | throw\ \w+;?
      | (?:Node\.js|node|Python|PyPy|Ruby|ruby|Deno|deno|Bun|bun|go|Go)\ v?\d+(?:\.\d+)+.*
      | [{}()\[\],;]+
    )$""",
    re.VERBOSE,
)
_EXCEPTION = re.compile(r"^(?:E\s+)?[\w.]*(?:Error|Exception|Failure)(?:\s*\[[^\]]*\])?:\s*\S")
_EXPECTED = re.compile(
    r"\bexpected\b.*\b(?:got|but\s+was|received|actual|found)\b|^E\s+assert\b|^assert\b",
    re.IGNORECASE,
)
_FAILED = re.compile(r"\bFAIL(?:ED|URE)?\b|^not ok\b|^panic:")
_BARE = re.compile(r"^[\w.]*(?:Error|Exception)$")
_PYTEST_PREFIX = re.compile(r"^E\s+")
_ERRORISH = re.compile(r"\berror\b|\bfail", re.IGNORECASE)


def informative_line(output: str) -> str:
    """The line of a failed command's output that best says what went wrong.

    Prefers, in this order: an exception or error with a message
    (``AssertionError: ...``, ``Error: ...``), an expected/got comparison or
    a failed assert, a FAIL line or a bare exception name, any line mentioning
    an error, then any other line.  Traceback headers and ``File ...`` lines,
    source lines a traceback quotes, stack frames (``at ...``) and version
    banners (``Node.js v20.11.0``) are never chosen.  Among equals the last
    wins (the final exception of a chain); pytest's ``E`` prefix is dropped.
    A bare exception name borrows the source line its traceback quotes; a
    line ending in ``:`` borrows the next.
    """
    lines = [line.strip() for line in output.splitlines()]
    quoted = _quoted_source(output.splitlines())
    best, best_rank = -1, 0
    for number, line in enumerate(lines):
        rank = 0 if number in quoted else _rank(line)
        if rank and rank >= best_rank:
            best, best_rank = number, rank
    if best < 0:
        return ""
    line = _PYTEST_PREFIX.sub("", lines[best])
    if _BARE.match(line):
        source = [lines[n] for n in sorted(quoted) if n < best]
        if source:
            line = f"{line} at: {source[-1]}"
    elif line.endswith(":"):
        follow = next((t for t in lines[best + 1 :] if t and not _NOISE.match(t)), "")
        if follow:
            line = f"{line} {follow}"
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 1] + "…"


def _rank(line: str) -> int:
    if not line or _NOISE.match(line):
        return 0
    if _EXCEPTION.match(line):
        return 5
    if _EXPECTED.search(line):
        return 4
    if _FAILED.search(line) or _BARE.match(line):
        return 3
    if _ERRORISH.search(line):
        return 2
    return 1


def _quoted_source(raw: Sequence[str]) -> set[int]:
    """Numbers of the lines a Python traceback quotes under its ``File ...`` lines."""
    quoted: set[int] = set()
    for number, line in enumerate(raw[:-1]):
        nxt = raw[number + 1]
        if line.lstrip().startswith('File "') and nxt.startswith("    ") and nxt.strip():
            quoted.add(number + 1)
    return quoted


_MASK = re.compile(rb"REDACTED\**|REDACTE|REDACT|REDAC|REDA|RED")
"""A same-length mask: ``REDACTED`` then ``*``, or a prefix of it for a short secret."""


def redacted_note(paths: tuple[str, ...]) -> str:
    """What a check's detail adds when it ran on masked files."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return f"; secrets masked in {shown} before recording: checked on redacted content"


def same_but_masked(recorded: bytes, original: bytes, path: str, session: Session) -> bool:
    """True if ``recorded`` is ``original``, or (for a file the snapshot masked) differs
    from it only inside masks of the same length."""
    if recorded == original:
        return True
    if path not in session.workspace_redacted or len(recorded) != len(original):
        return False
    expected = bytearray(original)
    for m in _MASK.finditer(recorded):
        expected[m.start() : m.end()] = m.group()
    return expected == recorded
