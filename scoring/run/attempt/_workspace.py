"""The fresh folder each attempt works in, and the snapshot of what it left there.

Every attempt gets its own temporary folder holding the case's files (an
empty folder for cases without ``files``).  After the agent stops, the final
files are kept on the tape as a ``WorkspaceSnapshot`` so outcome checks can be
rescored offline, and the folder is deleted.  The snapshot is bounded: a file
over ``MAX_FILE`` bytes is left out, and files stop being kept once
``MAX_TOTAL`` bytes are held; every path left out is listed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from evaltape.recorder import FileEntry, WorkspaceSnapshot

from ..._errors import ScoringError
from ...cases._cases import Case
from ...checks._outcome import MAX_SNAPSHOT_FILES

MAX_FILE = 1 << 20
"""Largest file a snapshot keeps (1 MiB)."""
MAX_TOTAL = 16 << 20
"""Bytes a snapshot keeps at most (16 MiB); later files are listed as omitted."""


class WorkspaceError(ScoringError):
    """A case's files could not be laid out in the attempt's folder."""


RUN_FOLDER_PREFIX = "evaltape-run-"
"""How the folder of a run's workspaces is named in the temporary folder (then the run id)."""


def run_workspaces(run_id: str, temp: str | os.PathLike[str] | None = None) -> Path:
    """The folder a run's attempts make their workspaces in: ``evaltape-run-<run id>`` in
    ``temp`` (default: the system's temporary folder).  Kept in the run record, so the
    workspaces a killed run left behind can be found and only they removed."""
    return Path(temp if temp is not None else tempfile.gettempdir()) / (RUN_FOLDER_PREFIX + run_id)


def remove_run_workspaces(folder: Path, run_id: str) -> int:
    """Delete the run's workspace folder (``run_workspaces``) and what is in it; the number
    of attempt workspaces it held.  Anything not named as this run's folder, or that is a
    symbolic link, is left alone and ``WorkspaceError`` raised."""
    if folder.name != RUN_FOLDER_PREFIX + run_id:
        raise WorkspaceError(f"{folder}: not the workspace folder of run {run_id}; left alone")
    if folder.is_symlink():
        raise WorkspaceError(f"{folder}: a symbolic link, not a workspace folder; left alone")
    if not folder.is_dir():
        return 0
    held = sum(1 for entry in folder.iterdir() if entry.name.startswith("evaltape-"))
    remove_workspace(folder)
    if folder.exists():
        raise WorkspaceError(f"{folder}: could not be removed")
    return held


def tidy_run_workspaces(folder: Path) -> None:
    """Remove the run's workspace folder once its attempts are done, if it is empty (an
    abandoned agent thread may still be in one of its workspaces)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def make_workspace(case: Case, *, parent: str | os.PathLike[str] | None = None) -> Path:
    """A new temporary folder holding ``case.files`` (relative paths, UTF-8 text), in
    ``parent`` (made if missing; default: the system's temporary folder)."""
    if parent is not None:
        try:
            Path(parent).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"{parent}: cannot make the run's workspace folder: {exc}"
            ) from exc
    root = Path(tempfile.mkdtemp(prefix="evaltape-", dir=parent))
    try:
        for rel, text in (case.files or {}).items():
            target = (root / rel).resolve()
            if not target.is_relative_to(root.resolve()):
                raise WorkspaceError(f"{case.where}: file {rel!r} lies outside the workspace")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        remove_workspace(root)
        raise WorkspaceError(f"{case.where}: cannot write the case's files: {exc}") from exc
    except WorkspaceError:
        remove_workspace(root)
        raise
    return root


def snapshot_workspace(
    root: Path, *, at: float, max_file: int = MAX_FILE, max_total: int = MAX_TOTAL
) -> WorkspaceSnapshot:
    """The regular files under ``root``, sorted by path, within the size bounds.

    Symbolic links are not followed (a link is listed as omitted), so an
    agent cannot make the snapshot read files outside its folder.  Past
    ``MAX_SNAPSHOT_FILES`` files, later ones are listed as omitted, as past
    ``max_total`` bytes, so a check can always restore what was kept.
    """
    kept: list[FileEntry] = []
    omitted: list[str] = []
    total = 0
    full = False
    for path in sorted(_walk(root)):
        rel = path.relative_to(root).as_posix()
        try:
            info = path.lstat()
        except OSError:
            omitted.append(rel)
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_file:
            omitted.append(rel)
            continue
        if full or total + info.st_size > max_total or len(kept) >= MAX_SNAPSHOT_FILES:
            full = True  # the budget is spent: every later file is listed, not kept
            omitted.append(rel)
            continue
        try:
            data = path.read_bytes()
        except OSError:
            omitted.append(rel)
            continue
        total += len(data)
        kept.append(FileEntry(path=rel, data=data, mode=stat.S_IMODE(info.st_mode)))
    return WorkspaceSnapshot(at=at, files=tuple(kept), omitted=tuple(omitted))


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        found.extend(base / name for name in files)
        found.extend(base / name for name in dirs if (base / name).is_symlink())
    return found


def remove_workspace(root: Path) -> None:
    """Delete the folder and everything in it, even read-only folders; never raises."""
    for folder, _dirs, _files in os.walk(root, followlinks=False):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    shutil.rmtree(root, ignore_errors=True)
