"""``run_bisect``: the harness commit that broke a replayed case, found by ``git bisect run``.

Replay is a free, deterministic oracle: the tapes fix the model's outputs,
so a commit whose replay shows a regression or a harness change is bad, one
whose replay is unchanged is good, and one whose recording is stale (only
harness text differs: nothing can be said) is skipped.  The tapes are the
ones committed at BAD (or a given folder), copied aside first, so they do
not move while git checks out older commits.  Each step runs
``evaltape replay`` from the checked-out tree (``_bisect_oracle``); the
outcome lists every step, the first bad commit and its diff summary.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import attrs

from .._config import Config, display_path
from ._host import SILENT, Host, Reporter
from ._setup import RunRefused

FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
"""How ``git bisect`` names the commit it found."""
COULD_BE = "The first bad commit could be any of:"
"""How ``git bisect`` says that skipped commits leave several candidates."""


@attrs.frozen(kw_only=True)
class BisectRequest:
    """What to bisect."""

    config: Config
    """Settings; the cassettes folder is where the tapes are found at BAD."""
    host: Host
    """The project folder (inside the git repository to bisect) and the environment."""
    good: str
    """A commit (any git revision) where the replay passes."""
    bad: str
    """A commit where it fails; its tapes are the ones replayed at every step."""
    cases: tuple[str, ...] = ()
    """Only these cases: exact ids or id prefixes (default: every recorded case)."""
    suite: str | None = None
    """Only the suite of this name."""
    tapes: Path | None = None
    """Replay this folder of tapes (copied first) instead of the cassettes as at BAD."""
    reporter: Reporter = SILENT
    """Where progress goes."""


@attrs.frozen(kw_only=True)
class BisectStep:
    """One commit ``git bisect`` asked about."""

    commit: str
    """Its full hash."""
    answer: str
    """``good``, ``bad``, ``skip`` or ``abort``."""
    exit_code: int
    """The replay's exit code at that commit."""
    decision: str
    """The replay's decision line."""
    counts: dict[str, int] = attrs.field(factory=dict)
    """Its non-zero counts per kind (``regression``, ``changed``, ``stale``, ...)."""


@attrs.frozen(kw_only=True)
class BisectOutcome:
    """What the bisection found."""

    first_bad: str
    """The full hash of the first bad commit; "" when skipped commits left several."""
    summary: tuple[str, ...]
    """``git show --stat`` of it: the subject line, then one line per file changed."""
    candidates: tuple[str, ...] = ()
    """When commits had to be skipped next to it: every commit that could be the first bad."""
    steps: tuple[BisectStep, ...] = ()
    """Every commit tested, in order."""
    log: str = ""
    """``git bisect log``: the run, replayable with ``git bisect replay``."""


def _git(root: Path, host: Host, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, env=dict(host.environ), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if check and done.returncode != 0:
        detail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise RunRefused(f"git {' '.join(args)}: {detail[-1] if detail else 'failed'}")
    return done.stdout


def _commit(root: Path, host: Host, rev: str, what: str) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root, env=dict(host.environ), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RunRefused(f"{what} {rev!r} is not a commit of {display_path(root)}")
    return done.stdout.strip()


def _tapes_at(root: Path, host: Host, bad: str, folder: Path, into: Path) -> Path:
    """The folder's files as committed at ``bad``, extracted under ``into``."""
    try:
        rel = folder.resolve().relative_to(root)
    except ValueError as exc:
        raise RunRefused(
            f"the cassettes folder {display_path(folder)} is outside the repository; "
            "pass --tapes DIR"
        ) from exc
    done = subprocess.run(
        ["git", "archive", "--format=tar", bad, "--", rel.as_posix()],
        cwd=root, env=dict(host.environ), capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RunRefused(
            f"no tapes under {rel.as_posix()} at {bad[:12]} (is the cassettes folder "
            "committed?); pass --tapes DIR"
        )
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(into, filter="data")
    return into / rel


def run_bisect(request: BisectRequest) -> BisectOutcome:
    """Bisect from GOOD to BAD with replay as the oracle; the repository is left as found.

    Raises ``RunRefused`` before bisecting when the project is not in a git
    repository, its tracked files have uncommitted changes, a bisect is
    already under way, a revision is not a commit, or no tapes are found.
    """
    host, reporter = request.host, request.reporter
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=host.project, env=dict(host.environ), capture_output=True, text=True, check=False,
    )  # fmt: skip
    if top.returncode != 0:
        raise RunRefused(f"{display_path(host.project)} is not inside a git repository")
    root = Path(top.stdout.strip()).resolve()
    if _git(root, host, "status", "--porcelain", "--untracked-files=no").strip():
        raise RunRefused("the work tree has uncommitted changes; commit or stash them first")
    if Path(root, _git(root, host, "rev-parse", "--git-path", "BISECT_START").strip()).exists():
        raise RunRefused("a git bisect is already under way; finish it with git bisect reset")
    good = _commit(root, host, request.good, "GOOD")
    bad = _commit(root, host, request.bad, "BAD")
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", good, bad],
        cwd=root, env=dict(host.environ), capture_output=True, check=False,
    )  # fmt: skip
    if ancestor.returncode != 0 or good == bad:
        raise RunRefused(f"GOOD {request.good!r} must be an older commit than BAD {request.bad!r}")
    with tempfile.TemporaryDirectory(prefix="evaltape-bisect-") as scratch:
        work = Path(scratch)
        if request.tapes is not None:
            if not request.tapes.is_dir():
                raise RunRefused(f"{display_path(request.tapes)}: no such folder of tapes")
            tapes = Path(shutil.copytree(request.tapes, work / "tapes"))
        else:
            tapes = _tapes_at(root, host, bad, request.config.cassettes, work / "snapshot")
        log = work / "steps.jsonl"
        replay = ["--cassettes", str(tapes), "--results", str(work / "results")]
        for case in request.cases:
            replay += ["--cases", case]
        if request.suite is not None:
            replay += ["--suite", request.suite]
        reporter.note(f"bisect: {good[:12]} (good) .. {bad[:12]} (bad), tapes as at {bad[:12]}")
        _git(root, host, "bisect", "start", bad, good)
        try:
            project = str(host.project.resolve())
            oracle = [sys.executable, "-m", "evaltape.scoring.run._bisect_oracle"]
            oracle += ["--log", str(log), "--cwd", project, "--", *replay]
            ran = subprocess.run(
                ["git", "bisect", "run", *oracle],
                cwd=root, env=dict(host.environ), capture_output=True, text=True, check=False,
            )  # fmt: skip
            history = _git(root, host, "bisect", "log", check=False)
        finally:
            _git(root, host, "bisect", "reset", check=False)
        lines = log.read_text().splitlines() if log.is_file() else []
    steps = tuple(BisectStep(**json.loads(line)) for line in lines)
    found = FIRST_BAD.search(ran.stdout)
    if found is not None:
        first = found.group(1)
        summary = _git(root, host, "show", "--stat", "--format=%h %s", "--no-color", first)
        return BisectOutcome(
            first_bad=first,
            summary=tuple(line for line in summary.splitlines() if line.strip()),
            steps=steps,
            log=history,
        )
    if COULD_BE in ran.stdout:
        tail = ran.stdout.split(COULD_BE, 1)[1].split()
        candidates = tuple(t for t in tail if re.fullmatch(r"[0-9a-f]{40}", t))
        return BisectOutcome(first_bad="", summary=(), candidates=candidates, steps=steps,
                             log=history)  # fmt: skip
    said = (ran.stderr.strip() or ran.stdout.strip()).splitlines()
    raise RunRefused(f"git bisect run stopped: {said[-1] if said else 'no answer'}")
