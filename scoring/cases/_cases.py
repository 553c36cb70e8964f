"""Eval cases as immutable values, loaded from JSON Lines suite files.

A suite is one ``.jsonl`` file; its name is the file's stem.  Each non-blank
line is one case.  Loading checks every line of every file first
(``_validate.py``) and refuses the whole load with *all* problems at once,
before any agent or model is called.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Generic, TypeAlias, TypeVar

import attrs

from evaltape.scoring._errors import ScoringError
from evaltape.scoring.cases._validate import MUTATING_MODES, check_case, parse_line, suggest

V = TypeVar("V")


@attrs.frozen(eq=False)
class FrozenMap(Mapping[str, V], Generic[V]):
    """A read-only mapping kept as a tuple of pairs, in the order the file gave them.

    Equality and hashing ignore order, as for a dict.
    """

    pairs: tuple[tuple[str, V], ...]
    """The entries, in file order."""

    @classmethod
    def of(cls, mapping: Mapping[str, V]) -> FrozenMap[V]:
        """Copy a mapping."""
        return cls(tuple(mapping.items()))

    def __getitem__(self, key: str) -> V:
        for k, v in self.pairs:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.pairs) == dict(other.items())

    def __hash__(self) -> int:
        return hash(frozenset(self.pairs))

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self.pairs)!r})"


JsonValue: TypeAlias = "str | int | float | bool | tuple[JsonValue, ...] | FrozenMap[JsonValue]"
"""An expected argument value: JSON arrays become tuples, objects FrozenMaps."""


def freeze(value: object) -> JsonValue:
    """Turn decoded JSON (lists, dicts) into immutable ``JsonValue``s."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return FrozenMap(tuple((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"not an expected-argument value: {value!r}")


def thaw(value: JsonValue) -> object:
    """The plain JSON form of a frozen value (tuples to lists, FrozenMaps to dicts)."""
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    if isinstance(value, FrozenMap):
        return {k: thaw(v) for k, v in value.pairs}
    return value


class CaseKind(enum.Enum):
    """What decides a case's verdict beyond its trajectory expectations."""

    TRAJECTORY = "trajectory"
    """Only the trace is checked: which tools fired, with what arguments, how many turns."""
    CODING = "coding"
    """The agent works in a sandbox of ``files``; immutable files and ``verify`` decide."""
    JUDGED = "judged"
    """A judge model grades the reply against a markdown ``rubric``."""


class AgentMode(enum.Enum):
    """The permission mode the agent runs in; the only thing that *prevents* a write."""

    PLAN = "plan"
    """Plans only: may read, may not change files or run mutating commands."""
    READ_ONLY = "read-only"
    """May read files and run read-only tools; writes are refused."""
    EDIT = "edit"
    """May edit files in the sandbox."""
    BUILD = "build"
    """May edit files and run commands in the sandbox."""
    DANGER = "danger"
    """Every tool allowed without asking."""

    @property
    def mutating(self) -> bool:
        """Whether the agent may change files in this mode (needs a ``files`` sandbox)."""
        return self.value in MUTATING_MODES


@attrs.frozen(kw_only=True)
class KnownGap:
    """A case expected to fail today, kept as a record rather than silenced."""

    notes: str
    """What happens today."""
    target: str
    """What passing looks like."""


@attrs.frozen(kw_only=True)
class Case:
    """One eval case, checked and immutable.  Field names follow the JSON in snake_case."""

    suite: str
    """Name of the suite (the file's stem)."""
    path: str
    """The suite file the case came from, as given to the loader."""
    line: int
    """1-based line of the case in ``path``."""
    id: str
    """Unique across every loaded suite."""
    prompt: str
    """The user message the agent receives."""
    failure_category: str
    """What kind of regression the case guards against (``failureCategory``)."""
    why_model_backed: str
    """Why this needs a real model rather than a unit test (``whyModelBacked``)."""
    fingerprint: str
    """sha256 of the case's canonical JSON: changes whenever its definition changes."""
    expect_first_tool_in: tuple[str, ...] | None = None
    """The first tool called must be one of these."""
    expect_tool: str | None = None
    """This tool must be called at some point (None: no such expectation)."""
    expect_no_tool: bool = False
    """``"expectTool": null`` in the file: the case passes only if no tool fires."""
    expect_in_args: FrozenMap[JsonValue] | None = None
    """Some call of ``expect_tool`` must carry these arguments (see docs/cases.md)."""
    expect_max_turns: int | None = None
    """At most this many model turns."""
    forbid_tools: tuple[str, ...] = ()
    """None of these tools may fire."""
    expect_bash_matches: tuple[str, ...] = ()
    """Python regular expressions; each must match some bash command (``re.search``)."""
    files: FrozenMap[str] | None = None
    """The sandbox's starting files (relative path to content); None: no sandbox."""
    verify: str | tuple[str, ...] | None = None
    """Command that must exit 0 in the sandbox: a shell string or an argv tuple."""
    verify_timeout: float | None = None
    """Seconds ``verify`` may run; None: the runner's default."""
    immutable: tuple[str, ...] = ()
    """Files (from ``files``) whose bytes must be unchanged at the end."""
    rubric: str | None = None
    """Name of the rubric the judge grades against."""
    rubric_path: str | None = None
    """Where that rubric was found (``<rubrics dir>/<rubric>.md``)."""
    model: str | None = None
    """Pins the model under test for this case."""
    agent_mode: AgentMode | None = None
    """The agent's permission mode; None: the agent's own default."""
    known_gap: KnownGap | None = None
    """Expected to fail today; reported apart from regressions."""
    quarantined: bool = False
    """Flaky: run and reported, but kept out of the gate."""

    @property
    def kind(self) -> CaseKind:
        """Judged if it has a rubric, coding if it checks an outcome, else trajectory.

        A trajectory case may still have ``files``: a sandbox to look at.
        """
        if self.rubric is not None:
            return CaseKind.JUDGED
        if self.verify is not None or self.immutable:
            return CaseKind.CODING
        return CaseKind.TRAJECTORY

    @property
    def where(self) -> str:
        """``path:line``, for messages."""
        return f"{self.path}:{self.line}"


@attrs.frozen(kw_only=True)
class Suite:
    """The cases of one suite file, in file order."""

    name: str
    """The file's stem: ``evals/coding.jsonl`` is suite ``coding``."""
    path: str
    """The file, as given to the loader."""
    cases: tuple[Case, ...]
    """Its cases."""

    def count(self, kind: CaseKind) -> int:
        """How many of the cases are of ``kind``."""
        return sum(1 for case in self.cases if case.kind is kind)


@attrs.frozen
class Problem:
    """One thing wrong with a suite file."""

    path: str
    """The file, as given to the loader."""
    line: int
    """1-based line, or 0 for the file as a whole."""
    message: str
    """What is wrong, naming the field."""

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.message}"
            if self.line
            else f"{self.path}: {self.message}"
        )


class CaseError(ScoringError):
    """Suite files were refused; ``problems`` lists every problem of every file."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class SelectionError(ScoringError):
    """A suite name or case prefix selected nothing."""


PathLike: TypeAlias = "str | os.PathLike[str]"


def load_suites(paths: Iterable[PathLike], *, rubrics_dir: PathLike) -> tuple[Suite, ...]:
    """Load and check suite files; a folder means every ``*.jsonl`` directly in it.

    Raises ``CaseError`` listing every problem of every file when anything is
    wrong, so nothing runs on a half-valid suite.
    """
    problems: list[Problem] = []
    files = _expand(paths, problems)
    rubrics = Path(rubrics_dir)
    first_seen: dict[str, tuple[str, int]] = {}
    suite_paths: dict[str, str] = {}
    suites: list[Suite] = []
    for path in files:
        name = Path(path).stem
        if name in suite_paths:
            problems.append(
                Problem(path, 0, f'suite name "{name}" is already used by {suite_paths[name]}')
            )
        suite_paths.setdefault(name, path)
        cases = _load_file(path, name, rubrics, first_seen, problems)
        if cases is not None:
            suites.append(Suite(name=name, path=path, cases=cases))
    if problems:
        raise CaseError(problems)
    return tuple(suites)


def _expand(paths: Iterable[PathLike], problems: list[Problem]) -> list[str]:
    files: list[str] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        text = os.fspath(given)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
            if not found:
                problems.append(Problem(text, 0, "no suite files (*.jsonl) in this folder"))
            candidates = [os.path.join(text, p.name) for p in found]
        elif path.exists():
            candidates = [text]
        else:
            problems.append(Problem(text, 0, "no such file or folder"))
            candidates = []
        for candidate in candidates:
            key = Path(candidate).resolve()
            if key not in seen:
                seen.add(key)
                files.append(candidate)
    return files


def _load_file(
    path: str,
    suite: str,
    rubrics: Path,
    first_seen: dict[str, tuple[str, int]],
    problems: list[Problem],
) -> tuple[Case, ...] | None:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        problems.append(Problem(path, 0, f"cannot read: {exc.strerror or exc}"))
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    before = len(problems)
    cases: list[Case] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(path, number, f"not UTF-8 (byte {exc.start + 1} of the line)"))
            continue
        if not text.strip():
            continue
        obj, error = parse_line(text)
        if obj is None:
            problems.append(Problem(path, number, error or "invalid line"))
            continue
        messages = check_case(obj, rubrics_dir=rubrics)
        case_id = obj.get("id")
        if isinstance(case_id, str) and case_id.strip():
            if case_id in first_seen:
                first_path, first_line = first_seen[case_id]
                messages.append(
                    f'duplicate id "{case_id}" (first defined at {first_path}:{first_line})'
                )
            else:
                first_seen[case_id] = (path, number)
        problems.extend(Problem(path, number, m) for m in messages)
        if not messages:
            cases.append(_build(obj, suite=suite, path=path, line=number, rubrics=rubrics))
    if len(problems) == before and not cases:
        problems.append(Problem(path, 0, "the suite has no cases"))
    return tuple(cases)


def _build(obj: dict[str, object], *, suite: str, path: str, line: int, rubrics: Path) -> Case:
    """Turn a checked case object into a ``Case`` (the checks guarantee every type)."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    get = obj.get
    files = get("files")
    verify = get("verify")
    bash = get("expectBashMatches")
    gap = get("knownGap")
    rubric = get("rubric")
    mode = get("agentMode")
    first = get("expectFirstToolIn")
    in_args = get("expectInArgs")
    turns = get("expectMaxTurns")
    timeout = get("verifyTimeout")
    return Case(
        suite=suite,
        path=path,
        line=line,
        id=str(obj["id"]),
        prompt=str(obj["prompt"]),
        failure_category=str(obj["failureCategory"]),
        why_model_backed=str(obj["whyModelBacked"]),
        fingerprint=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        expect_first_tool_in=tuple(_strs(first)) if first is not None else None,
        expect_tool=str(get("expectTool")) if get("expectTool") is not None else None,
        expect_no_tool="expectTool" in obj and obj["expectTool"] is None,
        expect_in_args=FrozenMap.of({str(k): freeze(v) for k, v in _dict(in_args).items()})
        if in_args is not None
        else None,
        expect_max_turns=turns if isinstance(turns, int) else None,
        forbid_tools=tuple(_strs(get("forbidTools"))),
        expect_bash_matches=tuple(_strs(bash)) if isinstance(bash, list) else _one(bash),
        files=FrozenMap(
            tuple((posixpath.normpath(str(k)), str(v)) for k, v in _dict(files).items())
        )
        if files is not None
        else None,
        verify=tuple(_strs(verify)) if isinstance(verify, list) else _opt_str(verify),
        verify_timeout=float(timeout) if isinstance(timeout, int | float) else None,
        immutable=tuple(posixpath.normpath(p) for p in _strs(get("immutable"))),
        rubric=_opt_str(rubric),
        rubric_path=str(rubrics / f"{rubric}.md") if rubric is not None else None,
        model=_opt_str(get("model")),
        agent_mode=AgentMode(mode) if mode is not None else None,
        known_gap=KnownGap(notes=str(_dict(gap)["notes"]), target=str(_dict(gap)["target"]))
        if gap is not None
        else None,
        quarantined=get("quarantined") is True,
    )


def _strs(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _dict(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _one(value: object) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else ()


def select(
    suites: Iterable[Suite], *, cases_prefix: str | None = None, suite: str | None = None
) -> tuple[Suite, ...]:
    """The suites and cases a run would use: ``suite`` by name, cases by id prefix.

    Suites left with no case are dropped.  Raises ``SelectionError`` when the
    suite name is unknown or nothing is selected, so a typo never runs zero
    cases and reports success.
    """
    suites = tuple(suites)
    names = tuple(s.name for s in suites)
    if suite is not None and suite not in names:
        raise SelectionError(
            f'no suite named "{suite}"{suggest(suite, names)}; the suites are '
            + (", ".join(names) or "none")
        )
    chosen: list[Suite] = []
    for candidate in suites:
        if suite is not None and candidate.name != suite:
            continue
        cases = tuple(c for c in candidate.cases if c.id.startswith(cases_prefix or ""))
        if cases:
            chosen.append(attrs.evolve(candidate, cases=cases))
    if not chosen:
        scope = f'suite "{suite}"' if suite is not None else "the loaded suites"
        if cases_prefix:
            raise SelectionError(f'no case id in {scope} starts with "{cases_prefix}"')
        raise SelectionError(f"no cases in {scope}")
    return tuple(chosen)
