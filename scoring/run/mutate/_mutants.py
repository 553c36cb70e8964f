"""Plant each mutation in a copy of the agent, replay the tapes, and say which were caught.

The agent's package (or module) is copied into a temporary folder under a
fresh name, its imports of itself renamed, so each copy imports beside the
original and the project's files are never touched.  The intact copy is
replayed first: if it does not replay unchanged, nothing a mutant does could
be told apart, and the run is refused.  A mutation in a tool can only change
attempts that call the tool, so each mutant replays just the cases whose
recorded attempts call it; a tool no attempt calls is missed without a
replay.  The replays run in threads of this process, whatever the executor
setting: only this process has the copies' folder on its path.  A mutant is
caught when its replay finds a REGRESSION or a harness change (CHANGED) in
any attempt.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from ..._config import Config
from ...verdicts._coverage import Attempt
from ...verdicts._replaycheck import Change
from .._host import Host, Reporter
from .._replay import ReplayOutcome, ReplayRequest, run_replay
from .._setup import RunRefused
from ..attempt._agents import AgentError, AgentKind, parse_agent
from ._operators import Mutation, find_mutations, mutated_source

CAUGHT = frozenset({Change.REGRESSION, Change.CHANGED})
"""The replay changes that catch a mutant."""


@attrs.frozen(kw_only=True)
class MutantResult:
    """One mutation and what the replay of its copy said."""

    mutation: Mutation
    """What was planted where."""
    caught: bool
    """A replayed attempt came out REGRESSION or CHANGED."""
    by: tuple[str, ...] = ()
    """The attempts that caught it, sorted: ``coding/fix-off-by-one m1 (attempt 2): regression``."""
    replayed: int = 0
    """Attempts replayed (those of cases whose recordings call the tool)."""
    note: str = ""
    """Why nothing was replayed (no recorded attempt calls the tool), else ""."""


@attrs.frozen(kw_only=True)
class MutationOutcome:
    """Every mutation planted, in order, and the score."""

    agent: str
    """The agent setting whose source was copied."""
    results: tuple[MutantResult, ...]
    """One per mutation."""

    @property
    def caught(self) -> int:
        """Mutations the tapes caught."""
        return sum(r.caught for r in self.results)

    @property
    def score(self) -> float:
        """Caught / planted (0.0 when nothing was planted)."""
        return self.caught / len(self.results) if self.results else 0.0


@attrs.frozen(kw_only=True)
class _Source:
    root: Path
    """The agent's package folder, or its module file when it is a top-level module."""
    package: str
    """The dotted name of ``root``."""
    module: str
    """The dotted module name the agent setting imports."""
    function: str
    """The agent function's name."""


def _source(config: Config, host: Host) -> _Source:
    try:
        spec = parse_agent(config.agent)
    except AgentError as exc:
        raise RunRefused(str(exc)) from exc
    if spec.kind is not AgentKind.PYTHON:
        raise RunRefused(
            f'--mutate needs a Python agent ("module:function"); agent "{spec.target}" is '
            "a command, whose tools it cannot copy"
        )
    module, _, function = spec.target.partition(":")
    parts = module.split(".")
    path = host.project.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return _Source(root=path, package=module, module=module, function=function)
    if path.with_suffix(".py").is_file():
        if len(parts) == 1:
            root = path.with_suffix(".py")
            return _Source(root=root, package=module, module=module, function=function)
        package = ".".join(parts[:-1])
        root = host.project.joinpath(*parts[:-1])
        return _Source(root=root, package=package, module=module, function=function)
    raise RunRefused(
        f'--mutate copies the agent\'s source: {module} (of agent "{spec.target}") is not a '
        f"package or module under {host.project}"
    )


def _copy(source: _Source, into: Path, name: str) -> Path:
    """The source copied as ``name`` under ``into``, every import of it renamed; the copy."""
    into.mkdir(parents=True)
    if source.root.is_dir():
        copied = Path(shutil.copytree(source.root, into / name, ignore=_CACHES))
        modules = sorted(copied.rglob("*.py"))
    else:
        copied = into / f"{name}.py"
        shutil.copy(source.root, copied)
        modules = [copied]
    pattern = re.compile(rf"(?<![\w.]){re.escape(source.package)}(?!\w)")
    for path in modules:
        text = path.read_text(encoding="utf-8")
        path.write_text(pattern.sub(name, text), encoding="utf-8")
    return copied


_CACHES = shutil.ignore_patterns("__pycache__")


def _forget(name: str) -> None:
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


def _caught_by(outcome: ReplayOutcome) -> tuple[str, ...]:
    lines = []
    for r in outcome.pool.results:
        if r.decision is not None and r.decision.change in CAUGHT:
            lines.append(
                f"{r.case.suite}/{r.case.id} {r.model} (attempt {r.attempt + 1}): "
                f"{r.decision.change.value}"
            )
    return tuple(sorted(lines))  # attempts finish in any order; the report does not


def run_mutants(
    config: Config,
    host: Host,
    *,
    tapes: tuple[Path, ...],
    attempts: tuple[Attempt, ...],
    reporter: Reporter,
) -> MutationOutcome:
    """Plant every standard mutation of the agent's tools in turn and replay (module docs).

    Raises ``RunRefused`` when the agent's source cannot be copied or holds no
    tool function, and when the intact copy does not replay unchanged.
    """
    source = _source(config, host)
    calling: Mapping[str, set[str]] = _calling(attempts)
    tools = set(calling) | {t for a in attempts for turn in a.session.turns
                            for t in turn.call.tools_offered}  # fmt: skip
    package = source.root if source.root.is_dir() else source.root.parent
    try:
        only = () if source.root.is_dir() else (source.root,)
        mutations = find_mutations(package, tools, only)
    except (OSError, SyntaxError, ValueError) as exc:
        raise RunRefused(f"--mutate cannot read the agent's source in {package}: {exc}") from exc
    if not mutations:
        raise RunRefused(
            f"--mutate found no tool function to mutate in {package}: tools are functions "
            f"named for them ({', '.join(sorted(tools)) or 'no tool was offered'})"
        )
    with tempfile.TemporaryDirectory(prefix="evaltape-mutants-") as tmp:
        replay = _replayer(config, host, source, Path(tmp), tapes)
        every = tuple(sorted({c for cases in calling.values() for c in cases}))
        intact = replay(0, None, every)
        if intact.exit_code != 0:
            raise RunRefused(
                f"the intact copy of the agent does not replay unchanged (replay exit "
                f"{intact.exit_code}); run evaltape replay and fix that first, or no "
                "mutant could be told apart"
            )
        results = []
        for n, mutation in enumerate(mutations, 1):
            result = _mutant(replay, n, mutation, tuple(sorted(calling.get(mutation.tool, ()))))
            word = "caught" if result.caught else "MISSED"
            reporter.note(f"[{n}/{len(mutations)}] {word} {mutation.label}")
            results.append(result)
    return MutationOutcome(agent=config.agent or "", results=tuple(results))


Replayer = Callable[[int, Mutation | None, tuple[str, ...]], ReplayOutcome]
"""Replays copy ``n`` of the agent, with the mutation planted, on the cases given."""


def _mutant(replay: Replayer, n: int, mutation: Mutation, cases: tuple[str, ...]) -> MutantResult:
    if not cases:
        note = f"no recorded attempt calls {mutation.tool}"
        return MutantResult(mutation=mutation, caught=False, note=note)
    outcome = replay(n, mutation, cases)
    by = _caught_by(outcome)
    return MutantResult(
        mutation=mutation, caught=bool(by), by=by, replayed=len(outcome.pool.results)
    )


def _calling(attempts: tuple[Attempt, ...]) -> dict[str, set[str]]:
    """Per tool, the cases whose recorded attempts call it."""
    found: dict[str, set[str]] = defaultdict(set)
    for a in attempts:
        for record in a.session.tool_calls:
            found[record.call.name].add(a.case.id)
    return found


def _replayer(
    config: Config, host: Host, source: _Source, where: Path, tapes: tuple[Path, ...]
) -> Replayer:
    """The ``Replayer`` of copies of ``source`` made under ``where``."""

    def replay(n: int, mutation: Mutation | None, cases: tuple[str, ...]) -> ReplayOutcome:
        name = f"_evaltape_mutant_{n}"
        copied = _copy(source, where / str(n), name)
        if mutation is not None:
            target = copied / mutation.path if copied.is_dir() else copied
            target.write_text(
                mutated_source(target.read_text(encoding="utf-8"), mutation, {mutation.tool}),
                encoding="utf-8",
            )
        module = name + source.module[len(source.package) :]
        # Threads of this process: only it has the copy's folder on its path.
        settings = attrs.evolve(
            config,
            agent=f"{module}:{source.function}",
            results=where / "results",
            executor="threads",
            ray_address=None,
            ray_working_dir=None,
        )
        sys.path.insert(0, str(where / str(n)))
        try:
            return run_replay(
                ReplayRequest(
                    config=settings, host=host, tapes=tapes, cases=cases, allow_unrecorded=True
                )
            )
        finally:
            sys.path.remove(str(where / str(n)))
            _forget(name)

    return replay
