"""Finding volatile text for the user: scrub rules proposed from recorded first requests.

A harness that writes a date, a process id or a random name into its prompt
sends other words on every run, and every replay of it is stale until a scrub
rule masks that text.  The first request of an attempt holds only text the
harness wrote (no model output yet), so two attempts of one case and model
that differ there differ in volatile text.  ``propose_scrub_rules`` compares
them and proposes one rule per differing span: the span generalised to a
character class, anchored on the literal words before it.  Dates and times in
common formats are proposed from a single attempt too, since a recording of
today differs from tomorrow's replay there.

Rules apply to request bodies as sent (JSON text), so an anchor is built only
from characters JSON leaves as they are.
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import attrs

from .._match import parse_json

MAX_ANCHOR = 24
"""Characters of literal context before a volatile span a rule keeps."""
MIN_ANCHOR = 3
"""Fewer literal characters than this before a span: anchored on what follows instead."""

DATE_FORMATS: tuple[tuple[str, str, str, str], ...] = (
    (
        "ISO date and time",
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        "%Y-%m-%d",
        "<time>",
    ),
    ("ISO date", r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d", "<date>"),
    (
        "date(1) output",
        r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
        r" [ \d]\d \d{2}:\d{2}:\d{2}(?: [A-Z]{2,5})? \d{4}",
        "date1",
        "<time>",
    ),
    (
        "month name date",
        r"(?:January|February|March|April|May|June|July|August|September|October|November"
        r"|December) \d{1,2}, \d{4}",
        "%B %d, %Y",
        "<date>",
    ),
    (
        "day month-name year",
        r"\d{1,2} (?:January|February|March|April|May|June|July|August|September|October"
        r"|November|December) \d{4}",
        "%d %B %Y",
        "<date>",
    ),
    ("numeric date", r"\d{1,2}/\d{1,2}/\d{4}", "%m/%d/%Y", "<date>"),
)
"""(name, regular expression, how to read its date, replacement) of the date and time
formats proposed on sight: when one in a first request names the day its attempt was
recorded (a day either side, for time zones), it will differ on another day."""

_DATES = [
    (name, re.compile(rf"(?<![\w-]){rx}(?![\w-])"), rx, fmt, to)
    for name, rx, fmt, to in DATE_FORMATS
]
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@attrs.frozen(kw_only=True)
class ScrubProposal:
    """A scrub rule proposed for text that differs from run to run."""

    pattern: str
    """The regular expression (matched in request bodies, JSON text)."""
    replacement: str
    """What a match becomes."""
    example: str
    """One text it matched, as recorded."""
    why: str
    """Why it is proposed: ``differs between attempts of CASE`` or the date format's name."""

    @property
    def toml(self) -> str:
        """The line to paste under ``[tool.evaltape.scrub]`` (or ``[scrub]``)."""
        return f"{_toml_string(self.pattern)} = {_toml_string(self.replacement)}"


def _toml_string(text: str) -> str:
    """A TOML literal string when it can be one (no escapes to read), else a basic one."""
    if "'" not in text and "\n" not in text:
        return f"'{text}'"
    return json.dumps(text)


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string leaf of a JSON value with its path, in document order."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def _texts(body: bytes) -> dict[str, str]:
    try:
        parsed = parse_json(body) if body else None
    except (ValueError, RecursionError):
        return {}
    return dict(_strings(parsed))


MAX_WORDS = 3
"""Words of literal context a rule keeps at most (a prompt's other facts stay out)."""


def _literal(text: str) -> str:
    """``text`` as a regular expression, escaping only what has to be (readable in TOML)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def _anchor_before(text: str, start: int, floor: int = 0) -> str:
    """The literal words just before ``text[start]`` a rule can anchor on ("" if too few).

    No further back than ``floor`` (the end of an earlier volatile span), a line
    break, a quote or a sentence's end; at most ``MAX_WORDS`` words."""
    before = text[max(floor, start - MAX_ANCHOR) : start]
    cut = max(before.rfind(c) for c in '\n"\\\t')
    before = before[cut + 1 :]
    sentence = before.rfind(". ")
    if sentence >= 0:
        before = before[sentence + 2 :]
    found = re.search(r"[A-Za-z0-9 ':,;()/_=#@-]*\Z", before)
    before = found.group(0) if found else ""
    words = before.split(" ")
    if len(words) > MAX_WORDS + 1:
        before = " ".join(words[-(MAX_WORDS + 1) :])
    return before if len(before.strip()) >= MIN_ANCHOR else ""


def _anchor_after(text: str, end: int) -> str:
    after = text[end : end + MAX_ANCHOR]
    found = re.match(r"[A-Za-z0-9 ':,.;()/_=#@-]*", after)
    after = found.group(0) if found else ""
    return after if len(after.strip()) >= MIN_ANCHOR else ""


def _shape(variants: Sequence[str]) -> str:
    """A character class matching every variant of a volatile span."""
    joined = "".join(variants)
    if joined.isdigit():
        return r"\d+"
    if re.fullmatch(r"[0-9a-f]+", joined):
        return "[0-9a-f]+"
    if re.fullmatch(r"[0-9A-Fa-f]+", joined):
        return "[0-9A-Fa-f]+"
    if re.fullmatch(r"[\w.-]+", joined):
        return r"[\w.-]+"
    return r"[^\s\"\\]+"


def _rule(text: str, start: int, end: int, variants: Sequence[str], floor: int) -> str | None:
    shape = _shape(variants)
    before = _anchor_before(text, start, floor)
    if before:
        return f"(?<={_literal(before)}){shape}"
    after = _anchor_after(text, end)
    if after:
        return f"{shape}(?={_literal(after)})"
    return None


def _spans(a: str, b: str) -> Iterator[tuple[int, int, str, str]]:
    """``(start, end, old, new)`` of the word runs of ``a`` that differ in ``b``."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    offsets = [0]
    for token in ta:
        offsets.append(offsets[-1] + len(token))
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            yield offsets[i1], offsets[i2], "".join(ta[i1:i2]), "".join(tb[j1:j2])


def _day(text: str, fmt: str) -> datetime.date | None:
    """The day a matched date text names, or None when it is not a real date."""
    try:
        if fmt == "date1":
            parts = text.split()
            day = f"{parts[1]} {parts[2]} {parts[-1]}"
            return datetime.datetime.strptime(day, "%b %d %Y").date()
        if fmt == "%Y-%m-%d":
            text = text[:10]  # a date-time: its date
        return datetime.datetime.strptime(text, fmt).date()
    except (ValueError, IndexError):
        return None


def _dates(texts: Iterable[str], days: frozenset[datetime.date]) -> Iterator[ScrubProposal]:
    for text in texts:
        taken: list[tuple[int, int]] = []
        for name, compiled, rx, fmt, to in _DATES:
            for found in compiled.finditer(text):
                if any(s <= found.start() < e for s, e in taken):
                    continue  # inside a longer format already seen
                taken.append(found.span())
                if _day(found.group(0), fmt) not in days:
                    continue  # a date of the task, not of the day it was recorded
                before = _anchor_before(text, found.start())
                pattern = f"(?<={_literal(before)}){rx}" if before else rx
                yield ScrubProposal(
                    pattern=pattern, replacement=to, example=found.group(0), why=name
                )


def _near(started: Iterable[float]) -> frozenset[datetime.date]:
    """The days around each start time (wall clock, seconds since the epoch)."""
    days: set[datetime.date] = set()
    for at in started:
        day = datetime.datetime.fromtimestamp(at, tz=datetime.UTC).date()
        days.update(day + datetime.timedelta(days=d) for d in (-1, 0, 1))
    return frozenset(days)


@attrs.frozen(kw_only=True)
class FirstRequests:
    """The first request bodies of one case's attempts with one model, as recorded."""

    label: str
    """What proposals name it by (the case id)."""
    bodies: tuple[bytes, ...]
    """One body per attempt."""
    started: tuple[float, ...] = ()
    """When each attempt started (wall clock, seconds since the epoch): a date in a body
    is proposed only when it names one of these days."""


def propose_scrub_rules(groups: Iterable[FirstRequests]) -> tuple[ScrubProposal, ...]:
    """Scrub rules for volatile text in first requests, one group per case and model.

    Text that differs between two attempts of a group at the same JSON path is
    proposed, as are dates (and date-times) that name the day an attempt was
    recorded.  Each pattern is proposed once.
    """
    found: dict[str, ScrubProposal] = {}
    for group in groups:
        label = group.label
        texts = [_texts(b) for b in group.bodies]
        if not texts:
            continue
        first = texts[0]
        for other in texts[1:]:
            for path, a in first.items():
                b = other.get(path)
                if b is None or a == b:
                    continue
                floor = 0
                for start, end, old, new in _spans(a, b):
                    if not old.strip() or not new.strip():
                        continue
                    pattern = _rule(a, start, end, (old, new), floor)
                    floor = end
                    if pattern is not None and pattern not in found:
                        found[pattern] = ScrubProposal(
                            pattern=pattern,
                            replacement="<volatile>",
                            example=old,
                            why=f"differs between attempts of {label}",
                        )
        days = _near(group.started)
        for proposal in _dates((t for texts_of in texts for t in texts_of.values()), days):
            found.setdefault(proposal.pattern, proposal)
    return tuple(found.values())
