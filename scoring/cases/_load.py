"""Loading suite files: expanding paths, reading each line, and building cases from it."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeAlias

import attrs

from ._answer import build_answer
from ._cases import AgentMode, Case, CaseError, KnownGap, Problem, Suite
from ._custom import FIELD, SETTING, NamedScorer, import_scorer, scorer_specs
from ._frozen import FrozenMap, freeze
from ._validate import check_case, parse_line

PathLike: TypeAlias = str | os.PathLike[str]


def load_suites(
    paths: Iterable[PathLike],
    *,
    rubrics_dir: PathLike,
    scorers: Sequence[str] = (),
    scorers_from: str = "config",
    code_dir: PathLike | None = None,
) -> tuple[Suite, ...]:
    """Load and check suite files; a folder means every ``*.jsonl`` directly in it.

    ``scorers`` names custom scorers (``module:function``) every case gets,
    from the config file ``scorers_from``; they and each case's own ``scorer``
    are imported now, with ``code_dir`` (default: the current folder) first on
    ``sys.path``.  Raises ``CaseError`` listing every problem of every file
    when anything is wrong, so nothing runs on a half-valid suite.
    """
    problems: list[Problem] = []
    code = Path(code_dir) if code_dir is not None else Path.cwd()
    common: list[NamedScorer] = []
    for spec in scorers:
        found = import_scorer(spec, code)
        if isinstance(found, str):
            problems.append(Problem(scorers_from, 0, f'setting "{SETTING}": {found}'))
        else:
            common.append(found)
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
        cases = _load_file(path, name, rubrics, first_seen, problems, (tuple(common), code))
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
    custom: tuple[tuple[NamedScorer, ...], Path],
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
        own: list[NamedScorer] = []
        if not messages and FIELD in obj:
            for spec in scorer_specs(obj[FIELD]):
                found = import_scorer(spec, custom[1])
                if isinstance(found, str):
                    messages.append(f'field "{FIELD}": {found}')
                else:
                    own.append(found)
        problems.extend(Problem(path, number, m) for m in messages)
        if not messages:
            case = _build(obj, suite=suite, path=path, line=number, rubrics=rubrics)
            cases.append(attrs.evolve(case, scorers=(*custom[0], *own)))
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
        expect_answer=build_answer(get("expectAnswer")),
        files=FrozenMap(
            tuple((posixpath.normpath(str(k)), str(v)) for k, v in _dict(files).items())
        )
        if files is not None
        else None,
        verify=tuple(_strs(verify)) if isinstance(verify, list) else _opt_str(verify),
        verify_timeout=float(timeout) if isinstance(timeout, int | float) else None,
        verify_expect=_opt_str(get("verifyExpect")),
        immutable=tuple(posixpath.normpath(p) for p in _strs(get("immutable"))),
        rubric=_opt_str(rubric),
        rubric_path=str(rubrics / f"{rubric}.md") if rubric is not None else None,
        rubric_text=_rubric_text(rubrics / f"{rubric}.md") if rubric is not None else None,
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


def _rubric_text(path: Path) -> str | None:
    """The rubric's markdown; None when it cannot be read (``read_rubric`` then says why
    when the judge needs it)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
