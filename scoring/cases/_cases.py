"""Eval cases as immutable values, loaded from JSON Lines suite files.

A suite is one ``.jsonl`` file; its name is the file's stem.  Each non-blank
line is one case.  Loading checks every line of every file first
(``_validate.py``) and refuses the whole load with *all* problems at once,
before any agent or model is called.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable, Sequence

import attrs

from .._errors import ScoringError
from ._answer import AnswerExpectation
from ._custom import NamedScorer
from ._fields import MUTATING_MODES, suggest
from ._frozen import FrozenMap, JsonValue


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
    expect_answer: AnswerExpectation | None = None
    """Checks of the final reply (``expectAnswer``); None: the reply is not checked."""
    scorers: tuple[NamedScorer, ...] = ()
    """Custom scorers, the config's first, then the case's own (``scorer``), in order."""
    files: FrozenMap[str] | None = None
    """The sandbox's starting files (relative path to content); None: no sandbox."""
    verify: str | tuple[str, ...] | None = None
    """Command that must exit 0 in the sandbox: a shell string or an argv tuple."""
    verify_timeout: float | None = None
    """Seconds ``verify`` may run; None: the runner's default."""
    verify_expect: str | None = None
    """A line ``verify`` must print last (its last non-empty line, stripped) besides exiting 0;
    None: the exit code alone decides."""
    immutable: tuple[str, ...] = ()
    """Files (from ``files``) whose bytes must be unchanged at the end."""
    rubric: str | None = None
    """Name of the rubric the judge grades against."""
    rubric_path: str | None = None
    """Where that rubric was found (``<rubrics dir>/<rubric>.md``)."""
    rubric_text: str | None = attrs.field(default=None, repr=False)
    """The rubric's markdown, read when the case was loaded, so the case carries it
    wherever it is scored (a Ray worker has no rubrics folder); None when not read."""
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


def select(
    suites: Iterable[Suite], *, cases: Sequence[str] = (), suite: str | None = None
) -> tuple[Suite, ...]:
    """The suites and cases a run would use: ``suite`` by name, ``cases`` by id.

    Each value of ``cases`` is an exact case id or, when no id equals it, an
    id prefix; empty selects every case.  Suites left with no case are
    dropped.  Raises ``SelectionError`` when the suite name is unknown or a
    value selects nothing (naming the close ids), so a typo never runs zero
    cases and reports success.
    """
    suites = tuple(suites)
    names = tuple(s.name for s in suites)
    if suite is not None and suite not in names:
        raise SelectionError(
            f'no suite named "{suite}"{suggest(suite, names)}; the suites are '
            + (", ".join(names) or "none")
        )
    scoped = tuple(s for s in suites if suite is None or s.name == suite)
    scope = f'suite "{suite}"' if suite is not None else "the loaded suites"
    ids = tuple(c.id for s in scoped for c in s.cases)
    wanted = match_ids(cases, ids, scope)
    chosen: list[Suite] = []
    for candidate in scoped:
        picked = tuple(c for c in candidate.cases if not cases or c.id in wanted)
        if picked:
            chosen.append(attrs.evolve(candidate, cases=picked))
    if not chosen:
        raise SelectionError(f"no cases in {scope}")
    return tuple(chosen)


def match_ids(values: Iterable[str], ids: Sequence[str], scope: str) -> set[str]:
    """The ids ``values`` select: each value an exact id or, when none equals it, a prefix.

    Raises ``SelectionError`` naming ``scope`` and close ids for a value that
    selects nothing.
    """
    wanted: set[str] = set()
    for value in dict.fromkeys(values):
        if value in ids:
            wanted.add(value)
            continue
        matched = {i for i in ids if i.startswith(value)}
        if not matched:
            close = difflib.get_close_matches(value, ids, n=3, cutoff=0.5)
            hint = f"; close ids: {', '.join(close)}" if close else ""
            raise SelectionError(f'no case id in {scope} is or starts with "{value}"{hint}')
        wanted |= matched
    return wanted


def split_cases(values: Iterable[str]) -> tuple[str, ...]:
    """``--cases a,b --cases c`` as ``("a", "b", "c")``: commas split, blanks dropped."""
    return tuple(
        dict.fromkeys(part.strip() for value in values for part in value.split(",") if part.strip())
    )
