"""Harvesting a draft case from a recorded session (``evaltape add``).

Every recorded failure is a nearly specified case: the prompt is on the tape,
and so are the model, the tools it called with their arguments, and the number
of turns.  ``draft_case`` turns one session (or one user turn of it) into a
case in the suite format, plus notes that say what the user must still decide.
The draft records what the session *did*, which is often the wrong behaviour
(that is why the session was kept), so the notes say so first.

Absolute paths in the expected arguments are shortened to their last two parts:
a temporary folder of the recording machine is a needle that never matches
again.  A shortened value is still contained in what the model sent, so the
draft passes on the session it came from; every shortening is named in a note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import attrs

from evaltape.recorder import RecordedSession, Session, TapeReader, ToolCallRecord, fold

from .._errors import ScoringError
from ..checks._trajectory import control_tools

TODO = "TODO:"
"""How every placeholder the user must replace starts."""

CATEGORY_PLACEHOLDER = f"{TODO} the failure class this case guards against, e.g. tool-routing"
"""``failureCategory`` of a draft."""
WHY_PLACEHOLDER = f"{TODO} why only a real model shows this, e.g. tool choice is a model decision"
"""``whyModelBacked`` of a draft."""

NEEDLE_LIMIT = 80
"""Characters of a recorded string argument kept as an ``expectInArgs`` needle (a prefix)."""


_ABSOLUTE = re.compile(
    r"(?<![\w.:/\\~-])(?:/|[A-Za-z]:[\\/])[^\s'\"`;,()<>|&*?]+",
)


class HarvestError(ScoringError):
    """A draft could not be made or written: no such session or turn, a refused suite."""


@attrs.frozen(kw_only=True)
class UserTurn:
    """One user message of a session and the model turns that answer it."""

    text: str
    """The user message."""
    first: int
    """Index of the first model turn whose request carried it."""
    end: int
    """Index one past the last model turn before the next user message."""


@attrs.frozen(kw_only=True)
class Draft:
    """A draft case and what the user must check before adding it."""

    fields: tuple[tuple[str, object], ...]
    """The case's fields, in the order the suite format lists them."""
    notes: tuple[str, ...]
    """One line each; the first says the recorded behaviour may be the wrong one."""

    @property
    def case_id(self) -> str:
        """The draft's id."""
        return str(dict(self.fields)["id"])

    def line(self) -> str:
        """The case as one JSON line (no newline)."""
        return json.dumps(dict(self.fields), ensure_ascii=False)


# -- choosing the session -----------------------------------------------------


def pick_session(
    tape: Path, which: str | None, notes: list[str] | None = None
) -> tuple[RecordedSession, int, int]:
    """The session ``which`` names in ``tape``: a 1-based position, or a session id or prefix.

    Without ``which``, the last session of the tape.  Returns the session,
    its 1-based position and how many sessions the tape holds; damage the
    reader noticed (a cut-short or corrupt tape) is added to ``notes``.
    """
    reader = TapeReader(tape, strict=False)
    sessions = [s for s in reader.sessions() if s.events]
    if notes is not None:
        notes.extend(n.message for n in reader.notes if n.kind != "incomplete")
    if not sessions:
        raise HarvestError(f"{tape}: the tape holds no readable session")
    count = len(sessions)
    if which is None:
        return sessions[-1], count, count
    matches = [(i, s) for i, s in enumerate(sessions, 1) if s.session_id.startswith(which)]
    if which.isdigit() and (1 <= int(which) <= count or not matches):
        position = int(which)
        if not 1 <= position <= count:
            raise HarvestError(
                f"{tape}: no session #{position}; the tape holds {count} "
                f"(--session 1..{count}, or a session id)"
            )
        return sessions[position - 1], position, count
    if len(matches) != 1:
        what = "no session" if not matches else f"{len(matches)} sessions"
        raise HarvestError(f'{tape}: {what} with an id starting "{which}"')
    position, session = matches[0]
    return session, position, count


def user_turns(session: Session) -> tuple[UserTurn, ...]:
    """The session's user messages in order, each with the model turns answering it.

    A request repeats the whole conversation, so a user message is new when a
    request carries more user messages than any before it.
    """
    found: list[tuple[str, int]] = []
    for turn in session.turns:
        users = [m.text for m in turn.call.input_messages if m.role == "user"]
        for text in users[len(found) :]:
            found.append((text, turn.index))
    out = []
    for i, (text, first) in enumerate(found):
        end = found[i + 1][1] if i + 1 < len(found) else len(session.turns)
        out.append(UserTurn(text=text, first=first, end=max(end, first + 1)))
    return tuple(out)


# -- the draft ----------------------------------------------------------------


def shorten_paths(text: str) -> str:
    """``text`` with each absolute path cut to its last two parts: ``/a/b/c.py`` -> ``b/c.py``."""

    def cut(match: re.Match[str]) -> str:
        parts = [p for p in re.split(r"[\\/]", match.group(0)) if p]
        if match.group(0)[1:2] == ":":
            parts = parts[1:]
        return "/".join(parts[-2:]) if len(parts) >= 2 else match.group(0)

    return _ABSOLUTE.sub(cut, text)


def _needle(key: str, value: str, notes: list[str]) -> str | None:
    """A string argument as an ``expectInArgs`` needle that the sent value contains."""
    paths = [m.group(0) for m in _ABSOLUTE.finditer(value)]
    shortened = [(p, shorten_paths(p)) for p in paths if shorten_paths(p) != p]
    needle = value
    if shortened:
        original, short = shortened[0]
        needle = short
        if value == original:
            notes.append(
                f'expectInArgs.{key}: absolute path "{original}" shortened to "{short}"; '
                "a folder of the recording machine never matches elsewhere"
            )
        else:
            notes.append(
                f'expectInArgs.{key}: "{_quote(value)}" names the absolute path "{original}"; '
                f'the needle is now "{short}" alone (a folder of the recording machine never '
                "matches elsewhere)"
            )
        for original, short in shortened[1:]:
            notes.append(
                f'expectInArgs.{key}: absolute path "{original}" ("{short}") left out of the needle'
            )
    if not needle.strip():
        return None
    if len(needle) > NEEDLE_LIMIT:
        needle = needle[:NEEDLE_LIMIT]
        notes.append(
            f"expectInArgs.{key}: cut to its first {NEEDLE_LIMIT} characters; "
            "write the shortest needle that still tells right from wrong"
        )
    return needle


def _quote(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _in_args(record: ToolCallRecord, notes: list[str]) -> dict[str, object] | None:
    sent = record.call.parsed_arguments()
    if not isinstance(sent, dict):
        notes.append(
            f"the {record.call.name} call's arguments are not a JSON object; no expectInArgs"
        )
        return None
    out: dict[str, object] = {}
    for key, value in sent.items():
        if isinstance(value, bool | int | float):
            out[key] = value
        elif isinstance(value, str):
            needle = _needle(key, value, notes)
            if needle is not None:
                out[key] = needle
        elif value is not None:
            notes.append(
                f"expectInArgs: argument {key} (an array or object) left out; add it by hand"
            )
    return out or None


def _tools(records: Iterable[ToolCallRecord]) -> list[str]:
    return list(dict.fromkeys(r.call.name for r in records))


def draft_case(
    session: Session,
    *,
    turn: int | None = None,
    case_id: str | None = None,
) -> Draft:
    """A draft case from ``session``: its ``turn``-th user message (1-based; default the first).

    ``prompt`` is that user message; ``model`` the session's; ``expectTool``
    the first tool called while answering it (``null`` if none was);
    ``expectInArgs`` that call's scalar arguments; ``expectMaxTurns`` the model
    turns it took.  ``failureCategory`` and ``whyModelBacked`` are ``TODO:``
    placeholders.  Raises ``HarvestError`` for a turn the session does not have.
    """
    turns = user_turns(session)
    if not turns:
        raise HarvestError(
            f"session {session.session_id} has no user message (no model call was recorded)"
        )
    chosen = turn or 1
    if not 1 <= chosen <= len(turns):
        raise HarvestError(
            f"session {session.session_id} has {len(turns)} user turn"
            f"{'' if len(turns) == 1 else 's'}; --turn {chosen} is out of range"
        )
    scope = turns[chosen - 1]
    notes = [
        "this draft records what the session did, and a harvested session often did the wrong "
        "thing (that is why it was kept): check every expectation against what the agent "
        "should do before adding the case",
    ]
    hidden = control_tools(session)
    records = [
        r
        for r in session.tool_calls
        if scope.first <= r.turn < scope.end and r.call.name not in hidden
    ]
    header = session.header
    model = header.model or session.turns[scope.first].call.model_requested
    draft_id = case_id or (
        f"{header.case_id}-{session.session_id[:6]}"
        if header.case_id
        else f"harvested-{session.session_id[:8]}"
    )
    fields: list[tuple[str, object]] = [
        ("id", draft_id),
        ("prompt", scope.text),
        ("failureCategory", CATEGORY_PLACEHOLDER),
        ("whyModelBacked", WHY_PLACEHOLDER),
    ]
    notes.append(
        f'failureCategory and whyModelBacked are placeholders starting "{TODO}"; evaltape '
        "validate accepts them, so replace both before committing (grep TODO)"
    )
    if not case_id:
        notes.append(f'id "{draft_id}" is made from the recorded case id; rename it with --id')
    if model:
        fields.append(("model", model))
    tools = _tools(records)
    if not tools:
        fields.append(("expectTool", None))
        notes.append(
            "expectTool is null: no tool fired, so the draft passes only if none fires; "
            "drop it if answering without tools is not the point"
        )
    else:
        fields.append(("expectTool", tools[0]))
        others = f"; it also called {', '.join(tools[1:])}" if len(tools) > 1 else ""
        notes.append(f"expectTool is the first tool the session called ({tools[0]}){others}")
        first = next(r for r in records if r.call.name == tools[0])
        args = _in_args(first, notes)
        if args is not None:
            fields.append(("expectInArgs", args))
            notes.append(
                f"expectInArgs holds the scalar arguments of that call (turn {first.turn + 1}); "
                "keep only the ones that tell right from wrong"
            )
    count = scope.end - scope.first
    fields.append(("expectMaxTurns", count))
    notes.append(
        f"expectMaxTurns is the observed count ({count} turn{'' if count == 1 else 's'}); "
        "loosen it unless the turn count is the point"
    )
    for path in dict.fromkeys(m.group(0) for m in _ABSOLUTE.finditer(scope.text)):
        if shorten_paths(path) != path:
            notes.append(
                f'the prompt names the absolute path "{path}", which may not exist where the '
                "case runs next; kept as recorded"
            )
    if chosen > 1:
        notes.append(
            f"user turn {chosen} is drafted on its own: the conversation before it is not "
            "part of the case, so its prompt may need the context it relied on"
        )
    if len(turns) > 1:
        notes.append(
            f"the session has {len(turns)} user turns; this draft covers turn {chosen} "
            f"(model turns {scope.first + 1}-{scope.end}); pick another with --turn K"
        )
    return Draft(fields=tuple(fields), notes=tuple(notes))


def harvest(
    tape: Path, *, session: str | None = None, turn: int | None = None, case_id: str | None = None
) -> Draft:
    """``draft_case`` of the session ``session`` names in ``tape`` (see ``pick_session``)."""
    damage: list[str] = []
    recorded, position, count = pick_session(tape, session, damage)
    draft = draft_case(fold(recorded.events), turn=turn, case_id=case_id)
    lead = (
        []
        if count == 1
        else [
            f"{tape} holds {count} sessions; this is #{position} ({recorded.session_id}); "
            "pick another with --session N"
        ]
    )
    if not recorded.complete:
        lead.append(f"session {recorded.session_id} has no end: {recorded.problem}")
    lead += damage
    return attrs.evolve(draft, notes=(draft.notes[0], *lead, *draft.notes[1:]))
