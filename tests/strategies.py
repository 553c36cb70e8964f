"""Hypothesis strategies for events and whole sessions, reusable by any test.

``session_plans()`` draws a complete session: a ``SessionStarted`` header,
the events in between (every event kind, arbitrary field values, empty and
binary bodies, many chunks, transport errors, workspace files) and how the
session ends.  Request bodies come from a few "conversations" that grow turn
by turn between a fixed prefix and suffix, as agent requests do, so the
delta encoding of request bodies is exercised (several bases, not only the
last one).  ``record(path, plan)`` writes a plan with ``open_session``.

Values stay inside what a tape can hold: integers fit 64 bits, floats are
not NaN (NaN never equals itself), strings are valid Unicode.
"""

from __future__ import annotations

import itertools
import os

import attrs
from hypothesis import strategies as st

from evaltape.recorder import (
    Chunk,
    Event,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    Mode,
    Request,
    Response,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Source,
    Status,
    TransportError,
    WorkspaceSnapshot,
    open_session,
)

texts = st.text(st.characters(codec="utf-8"), max_size=40)
"""Any valid Unicode text (no lone surrogates), short."""

ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
"""Integers msgpack holds."""

floats = st.floats(allow_nan=False)
"""Floats that equal themselves (infinities and -0.0 included)."""

times = st.floats(min_value=0, max_value=1e6, allow_nan=False)
"""Plausible time offsets in seconds."""

scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)
"""Values of metadata and harness fields."""

pairs = st.lists(st.tuples(texts, scalars), max_size=6).map(tuple)
"""Key/value tuples (keys may repeat: order and duplicates are kept)."""

headers = st.lists(
    st.tuples(st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12), texts), max_size=5
).map(tuple)
"""HTTP headers, names lower-cased."""

bodies = st.one_of(st.just(b""), st.binary(max_size=300), texts.map(str.encode))
"""Short bodies: empty, arbitrary bytes, or UTF-8 text."""


@st.composite
def conversations(draw: st.DrawFn, turns: int = 6) -> list[bytes]:
    """Request bodies of one conversation: ``prefix + turn_1 + ... + turn_i + suffix``."""
    prefix = draw(st.binary(min_size=0, max_size=200)) + b'{"messages":[' + b"x" * 60
    suffix = b'],"tools":[' + draw(st.binary(max_size=200)) + b"]}"
    history = b""
    out = []
    for _ in range(draw(st.integers(1, turns))):
        history += draw(st.one_of(st.binary(max_size=80), texts.map(str.encode)))
        out.append(prefix + history + suffix)
    return out


@st.composite
def chunk_lists(draw: st.DrawFn) -> tuple[Chunk, ...]:
    """Response chunks: none, a few arbitrary ones, or many (a stream cut at
    drawn points, empty chunks included), cheaply drawn."""
    few = draw(st.lists(st.builds(Chunk, at=times, data=bodies), max_size=3))
    if draw(st.booleans()):
        return tuple(few)
    blob = draw(st.binary(max_size=600))
    count = draw(st.integers(1, 80))
    start, step = draw(times), draw(st.floats(0, 1))
    cuts = sorted(draw(st.randoms()).randint(0, len(blob)) for _ in range(count - 1))
    edges = [0, *cuts, len(blob)]
    return tuple(
        Chunk(at=start + i * step, data=blob[a:b])
        for i, (a, b) in enumerate(itertools.pairwise(edges))
    )


chunks = chunk_lists()
"""Response chunks, possibly empty ones, possibly many."""

responses = st.builds(
    Response,
    status=st.integers(100, 599),
    headers=headers,
    chunks=chunks,
    streamed=st.booleans(),
)

transport_errors = st.builds(
    TransportError,
    type=texts,
    message=texts,
    after_chunks=st.integers(0, 2**31),
    after_bytes=st.integers(0, 2**40),
)


def exchanges(body: st.SearchStrategy[bytes] = bodies) -> st.SearchStrategy[Exchange]:
    """Exchanges with the given request bodies, with or without response and error."""
    return st.builds(
        Exchange,
        at=times,
        duration=floats,
        request=st.builds(
            Request,
            method=st.sampled_from(["POST", "GET", "PUT"]),
            url=texts.map(lambda s: "http://127.0.0.1:8080/v1/" + s),
            headers=headers,
            body=body,
        ),
        response=st.none() | responses,
        error=st.none() | transport_errors,
    )


harness_events = st.builds(HarnessEvent, at=times, name=texts, fields=pairs)
runner_facts = st.builds(RunnerFact, at=times, fact=st.sampled_from(FactKind), message=texts)
_segments = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1
).filter(lambda s: s not in (".", ".."))
snapshot_paths = st.lists(_segments, min_size=1, max_size=3).map("/".join)
"""Paths as a snapshot writes them: relative, no empty, ``.`` or ``..`` segment (a tape
holding another spelling is refused on read)."""
workspace_snapshots = st.builds(
    WorkspaceSnapshot,
    at=times,
    files=st.lists(
        st.builds(
            FileEntry,
            path=snapshot_paths,
            data=st.one_of(st.just(b""), st.binary(max_size=200)),
            mode=st.integers(0, 0o7777),
        ),
        max_size=5,
        unique_by=lambda f: f.path,
    ).map(tuple),
    omitted=st.lists(texts, max_size=3).map(tuple),
)

session_ids = st.binary(min_size=8, max_size=8).map(bytes.hex)

session_headers = st.builds(
    SessionStarted,
    session_id=session_ids,
    started_at=floats,
    case_id=texts,
    attempt=ints,
    model=texts,
    mode=st.sampled_from(Mode),
    source=st.sampled_from(Source),
    source_detail=texts,
    harness_commit=texts,
    harness_version=texts,
    seed=st.none() | ints,
    replay_of=texts,
    metadata=pairs,
)


@attrs.frozen(kw_only=True)
class SessionPlan:
    """A session to write: its header, middle events and ending."""

    header: SessionStarted
    """The SessionStarted event."""
    events: tuple[Event, ...]
    """Events appended between start and end."""
    status: Status
    """Status passed to ``end()``."""
    reason: str
    """Reason passed to ``end()``."""
    end_at: float
    """What the session's clock reads when it ends."""

    def expected(self) -> tuple[Event, ...]:
        """Every event a reader must return for the complete session."""
        end = SessionEnded(at=self.end_at, status=self.status, reason=self.reason)
        return (self.header, *self.events, end)


@st.composite
def middle_events(draw: st.DrawFn, max_events: int = 8) -> tuple[Event, ...]:
    """Events of every kind; exchanges take bodies from two interleaved conversations."""
    chains = [draw(conversations()), draw(conversations())]
    out: list[Event] = []
    for _ in range(draw(st.integers(0, max_events))):
        kind = draw(st.sampled_from(["chat", "chat", "exchange", "harness", "runner", "files"]))
        if kind == "chat":
            chain = chains[draw(st.integers(0, 1))]
            body = chain.pop(0) if chain else b""
            out.append(draw(exchanges(st.just(body))))
        elif kind == "exchange":
            out.append(draw(exchanges()))
        elif kind == "harness":
            out.append(draw(harness_events))
        elif kind == "runner":
            out.append(draw(runner_facts))
        else:
            out.append(draw(workspace_snapshots))
    return tuple(out)


@st.composite
def session_plans(draw: st.DrawFn, max_events: int = 8) -> SessionPlan:
    """A whole session: header, events of every kind, and its end."""
    return SessionPlan(
        header=draw(session_headers),
        events=draw(middle_events(max_events)),
        status=draw(st.sampled_from(Status)),
        reason=draw(texts),
        end_at=draw(times),
    )


def record(path: str | os.PathLike[str], plan: SessionPlan) -> None:
    """Write ``plan`` as one session at the end of the tape at ``path``."""
    writer = open_session(path, plan.header, clock=lambda: plan.end_at)
    for event in plan.events:
        writer.append(event)
    writer.end(plan.status, plan.reason)
