"""Compact exchanges (exchange4; exchange3 and exchange2 of older tapes): round trips, older
tapes, damage and budgets."""

from __future__ import annotations

import re
import shutil
import sys
from itertools import chain
from pathlib import Path
from types import ModuleType
from typing import Any

import msgpack
import pytest
from builders import OldPacker, exchange, stored_tape
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder import (
    Chunk,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeError,
    TapeReader,
    TransportError,
    open_session,
)
from evaltape.recorder.tape import CorruptTape
from evaltape.recorder.tape._codec import to_plain
from evaltape.recorder.tape._pack import Packer, Unpacker

ROOT = Path(__file__).resolve().parents[1]
SID = "00000000000000c1"


@pytest.fixture(scope="module")
def sdk_traffic() -> ModuleType:
    sys.path.insert(0, str(ROOT))
    from evals.perf import sdk_traffic

    return sdk_traffic


def _exchanges(path: Path) -> tuple[SessionStarted, list[Exchange]]:
    (session,) = TapeReader(path).sessions()
    return session.header, [e for e in session.events if isinstance(e, Exchange)]


def _rewrite(path: Path, header: SessionStarted, exchanges: list[Exchange], compact: bool) -> int:
    with open_session(path, header, clock=lambda: 9.0) as tape:
        if not compact:
            tape._packer = OldPacker("exchange")  # type: ignore[assignment]
        for exchange in exchanges:
            tape.append(exchange)
    return path.stat().st_size


@pytest.mark.slow
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_sdk_traffic_reads_back_exactly_and_smaller_than_format_1_0(
    sdk_traffic: ModuleType, tmp_path: Path, api: str
) -> None:
    recorded = tmp_path / "recorded.tape"
    with sdk_traffic.ModelServer() as server:
        sdk_traffic.record_session(server, recorded, api, 5, 8, "mixed", SID)
    header, exchanges = _exchanges(recorded)
    assert len(exchanges) == 8 and any(len(e.request.headers) > 10 for e in exchanges)
    old = _rewrite(tmp_path / "old.tape", header, exchanges, compact=False)
    new = _rewrite(tmp_path / "new.tape", header, exchanges, compact=True)
    assert _exchanges(tmp_path / "old.tape") == (header, exchanges)
    assert _exchanges(tmp_path / "new.tape") == (header, exchanges)
    assert new < 0.97 * old, (new, old)


@pytest.mark.slow
def test_the_writers_own_zstd_parameters_make_sdk_traffic_smaller_than_level_9(
    sdk_traffic: ModuleType, tmp_path: Path
) -> None:
    recorded = tmp_path / "recorded.tape"
    with sdk_traffic.ModelServer() as server:
        sdk_traffic.record_session(server, recorded, "anthropic", 0, 12, "streamed", SID)
    header, exchanges = _exchanges(recorded)
    sizes = {}
    for level in (None, 9):
        path = tmp_path / f"{level}.tape"
        with open_session(path, header, clock=lambda: 9.0, level=level) as tape:
            for exchange in exchanges:
                tape.append(exchange)
        assert _exchanges(path) == (header, exchanges)
        sizes[level] = path.stat().st_size
    assert sizes[None] < 0.995 * sizes[9], sizes


def test_a_shipped_tape_reads_as_before_and_takes_compact_sessions(tmp_path: Path) -> None:
    shipped = ROOT / "cassettes" / "coding" / "fix-off-by-one.tape"
    path = tmp_path / "t.tape"
    shutil.copyfile(shipped, path)
    before = [s.events for s in TapeReader(shipped).sessions()]
    assert before and any(isinstance(e, Exchange) for e in before[0])
    size = path.stat().st_size
    exchange = next(e for e in before[0] if isinstance(e, Exchange))
    header = SessionStarted(session_id=SID, started_at=1.0, case_id="appended")
    with open_session(path, header, clock=lambda: 3.0) as tape:
        tape.append(exchange)
        tape.append(exchange)
    assert path.read_bytes()[:size] == shipped.read_bytes()
    sessions = list(TapeReader(path).sessions())
    assert [s.events for s in sessions[:-1]] == before
    assert sessions[-1].events[1:3] == (exchange, exchange)


def test_a_request_that_drops_a_flag_from_its_head_refers_to_the_conversation_after_it() -> None:
    history = b",".join(
        b'{"role":"user","content":"%s"}' % (b"turn %d " % i * 40) for i in range(9)
    )
    tools = b'],"tools":[' + b'{"name":"read"},' * 20 + b'{"name":"write"}]}'
    streamed = b'{"model":"m","stream":true,"messages":[' + history + tools
    plain = b'{"model":"m","messages":[' + history + b',{"role":"user","content":"next"}' + tools
    packer, unpacker = Packer(), Unpacker()
    stored = []
    for body in (streamed, plain):
        exchange = Exchange(
            at=0.5, duration=0.25, request=Request(method="POST", url="u", body=body)
        )
        packed = packer.pack(to_plain(exchange))
        stored.append(msgpack.unpackb(packed)["x"][2])
        assert unpacker.unpack(packed)["request"]["body"] == body
    _, _, _, middle, ref = stored[1]
    # Only the new message is stored (where the copies end is the encoder's choice).
    assert len(middle) == len(b',{"role":"user","content":"next"}')
    back, skip, suffix, literal, start, length = ref
    prefix = len(streamed) - skip - suffix
    assert (back, prefix, literal) == (1, len(b'{"model":"m","'), 0), (ref, middle)
    assert streamed[start : start + length].startswith(b'messages":[{"role"')


def test_a_request_whose_best_base_is_the_oldest_kept_body_reads_back() -> None:
    """The oldest of the bodies a delta may refer to leaves the window as the new body
    enters it; its length is still what the stored reference is made against."""
    long = b'{"messages":[' + b'{"role":"user","content":"%s"},' % (b"x" * 3000)
    bodies = [long + b'"a"]}', b"other one " * 40, b"other two " * 40, b"other three " * 40]
    bodies.append(long + b'"b"]}')  # like the first, four bodies back
    packer, unpacker = Packer(), Unpacker()
    refs = []
    for body in bodies:
        exchange = Exchange(
            at=0.5, duration=0.25, request=Request(method="POST", url="u", body=body)
        )
        packed = packer.pack(to_plain(exchange))
        refs.append(msgpack.unpackb(packed)["x"][2][4])
        assert unpacker.unpack(packed)["request"]["body"] == body
    assert refs[-1] is not None and refs[-1][0] == 4


def _stored(q_headers: list[object], chunks: list[object] | None, ref: object = None) -> dict:
    r = None if chunks is None else [200, [], True, *chunks]  # new, pre, suf, mid, steps
    return {"k": "exchange2", "x": [0.0, 0.0, ["POST", "u", q_headers, b"{}", ref], r, None]}


MIB = 1 << 20
DAMAGED = {
    "header index past the table": (_stored([9999], None), "table entry 9999"),
    "header that is neither": (_stored([b"x"], None), "not an index or [name, value]"),
    "chunk columns of different lengths": (
        _stored([], [b"a", [0], [0], [1], []]),
        "chunk columns differ in length",
    ),
    "chunk column that is not ints": (_stored([], [b"a", [0], [0], [1.0], [0]]), "'mid' is not"),
    "chunk column that is not a list": (_stored([], [b"a", [0], 0, [1], [0]]), "'suf' is not"),
    "time steps that are not ints": (_stored([], [b"a", [0], [0], [1], [True]]), "'steps' is not"),
    "new bytes that do not add up": (
        _stored([], [b"ab", [0], [0], [1], [5]]),
        "do not add up",
    ),
    "chunk copying past the chunk before": (
        _stored([], [b"ab", [0, 2], [0, 5], [2, 0], [0, 0]]),
        "past the end of the chunk before",
    ),
    "negative length": (_stored([], [b"a", [0, 0], [0, -1], [1, 0], [0, 0]]), "negative length"),
    "delta with no base": (_stored([], None, [1, 0, 0]), "only 0 known"),
    "r of the wrong shape": (
        {"k": "exchange2", "x": [0.0, 0.0, ["POST", "u", [], b"", None], [200], None]},
        "'r' is not a list of 8",
    ),
    "chunks that rebuild a GiB from one MiB": (
        # each chunk copies the one before it whole
        _stored([], [b"x" * MIB, [0] + [MIB] * 1023, [0] * 1024, [MIB] + [0] * 1023, [0] * 1024]),
        "over the 256 MiB event limit",
    ),
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_compact_exchanges_are_reported_as_corrupt_at_their_offset(
    tmp_path: Path, name: str
) -> None:
    event, reason = DAMAGED[name]
    path = tmp_path / "bad.tape"
    stored_tape(path, SID, [event])
    with pytest.raises(CorruptTape) as info:
        list(TapeReader(path).sessions())
    message = str(info.value)
    assert message.startswith(f"{path}: byte ") and f"event 1 of session {SID}" in message
    assert reason in message, message
    (session,) = TapeReader(path, strict=False).sessions()
    assert [type(e).__name__ for e in session.events] == ["SessionStarted"]


def test_a_refused_exchange_leaves_the_header_table_as_the_reader_knows_it(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    header = SessionStarted(session_id=SID, started_at=0.0)

    def exchange(status: int, at: float = 0.0) -> Exchange:
        headers = (("x-trace", "abc"), ("content-length", "2"), ("content-type", "text/plain"))
        return Exchange(
            at=0.0,
            duration=0.0,
            request=Request(method="POST", url="u", headers=headers, body=b"{}"),
            response=Response(status=status, headers=headers, chunks=(Chunk(at=at, data=b"ok"),)),
        )

    with open_session(path, header, clock=lambda: 2.0) as tape:
        with pytest.raises(TapeError, match="cannot record Exchange: OverflowError"):
            tape.append(exchange(2**70))  # its new header pairs never reach the reader
        with pytest.raises(TapeError, match="cannot record Exchange: OverflowError"):
            tape.append(exchange(200, at=1e20))
        tape.append(exchange(200))
        tape.append(exchange(201))
    (session,) = TapeReader(path).sessions()
    assert session.complete
    assert list(session.events[1:-1]) == [exchange(200), exchange(201)]


def test_the_static_header_table_in_the_format_page_is_the_one_readers_use() -> None:
    from evaltape.recorder.tape._headers import STATIC

    page = (ROOT / "docs" / "format.md").read_text()
    listed = page[page.index("The static table, in order") : page.index("(63 pairs;")]
    pairs = [item.split(": ", 1) for item in re.findall(r"`([^`]+: [^`]*)`", listed)]
    assert [(name, "" if value == '""' else value) for name, value in pairs] == list(STATIC)
    assert len(STATIC) == 63


def _pairs_one_by_one(table: Any, stored: list[Any], length: int) -> Any:
    """What ``HeaderTable.pairs`` gives, header by header (the format page's reading)."""
    out = []
    for item in stored:
        if item is True:
            out.append(("content-length", str(length)))
        elif type(item) is int:
            if not 0 <= item < len(table._pairs):
                return f"header refers to table entry {item} of {len(table._pairs)}"
            out.append(table._pairs[item])
        else:
            return None
    return tuple(out), sum(len(n) + len(v) for n, v in out)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    stored=st.lists(st.one_of(st.integers(-2, 70), st.just(True), st.just(False)), max_size=8),
    length=st.integers(0, 10**6),
)
def test_stored_headers_of_table_entries_and_content_length_read_one_by_one(
    stored: list[Any], length: int
) -> None:
    """Lists of table entries, with or without the request's own content-length (one
    ``true``), take shortcuts; each reads as the headers one by one would."""
    from evaltape.recorder.tape._headers import HeaderTable

    table = HeaderTable()
    expected = _pairs_one_by_one(table, stored, length)
    if expected is None:  # a false: not a header the format knows
        with pytest.raises(ValueError):
            table.pairs(stored, length)
    elif isinstance(expected, str):
        with pytest.raises(ValueError, match=f"^{expected}$"):
            table.pairs(stored, length)
    else:
        assert table.pairs(stored, length) == expected


def test_the_readers_header_table_keeps_step_with_the_writers_past_its_limit() -> None:
    """Pairs of their own (a new value, a name the table lacks, the same new pair twice
    in one list) read back as written, before and after the table is full."""
    from evaltape.recorder.tape._headers import MAX_TABLE, HeaderTable

    writer, reader = HeaderTable(), HeaderTable()
    for n in range(MAX_TABLE // 8 + 40):
        headers = [
            ("date", f"day {n}"),
            ("x-same", "1"),
            *((f"x-unique-{k}", f"{n}-{k}") for k in range(6)),
            ("x-twice", f"{n}"),
            ("x-twice", f"{n}"),
            ("content-length", "12"),
        ]
        stored = writer.encode(headers, 12)
        assert reader.pairs(stored, 12) == (tuple(headers), sum(map(len, chain(*headers))))
    assert len(reader._pairs) == len(writer._pairs) == MAX_TABLE
    assert reader._index == writer._index and reader._names == writer._names


def test_a_header_list_read_before_reads_the_same_and_equal_keys_of_other_types_do_not() -> None:
    from evaltape.recorder.tape._headers import STATIC, HeaderTable

    table = HeaderTable()
    accept = STATIC[1]
    assert table.pairs([1, True], 7) == ((accept, ("content-length", "7")), 9 + 15)
    # read again (from what the table kept), with another length
    assert table.pairs([1, True], 12) == ((accept, ("content-length", "12")), 9 + 16)
    # True == 1 and 1.0 == 1 in Python: neither is taken for the other
    assert table.pairs([True, 1], 3) == ((("content-length", "3"), accept), 15 + 9)
    assert table.pairs([True, True], 3)[0] == (("content-length", "3"),) * 2
    with pytest.raises(ValueError, match="not an index"):
        table.pairs([1.0, True], 7)


def _older_traffic() -> list[Exchange]:
    """Streamed turns whose requests grow (stored as deltas), headers repeated and new,
    a plain JSON answer and a call that failed on the wire part-way through its stream."""
    turns = []
    for n in range(4):
        said = b",".join(b'{"n":%d,"text":"%s"}' % (i, b"w" * 200) for i in range(n + 1))
        body = b'{"messages":[%s]}' % said
        turns.append(
            exchange(
                "http://127.0.0.1:9/v1/chat/completions",
                body,
                request_headers=(("content-type", "application/json"), ("x-turn", str(n))),
                at=0.25 * n,
                headers=(("content-type", "text/event-stream"), ("x-id", f"r{n}")),
                chunks=[b'data: {"t":"%d"}\n\n' % i for i in range(n + 3)],
            )
        )
    turns.append(exchange("http://127.0.0.1:9/v1/chat/completions", {"n": 9}, {"ok": True}))
    cut = exchange("http://127.0.0.1:9/v1/chat/completions", b"{}", chunks=[b"data: 1\n\n"])
    error = TransportError(type="ReadError", message="reset", after_chunks=1, after_bytes=9)
    turns.append(
        Exchange(at=2.0, duration=0.5, request=cut.request, response=cut.response, error=error)
    )
    return turns


@pytest.mark.parametrize("kind", ["exchange", "exchange2", "exchange3"])
def test_an_older_writers_exchanges_read_back_as_written_through_the_one_decode(
    tmp_path: Path, kind: str
) -> None:
    """Formats 1.0 (plain maps), 1.1 and 1.2-2.0 are read through ``upgrade`` by the same
    decoder as today's exchanges, and give the exchanges their writer was handed."""
    path = tmp_path / f"{kind}.tape"
    sent = _older_traffic()
    with open_session(
        path, SessionStarted(session_id=SID, started_at=0.0), clock=lambda: 9.0
    ) as tape:
        tape._packer = OldPacker(kind)  # type: ignore[assignment]
        for event in sent:
            tape.append(event)
    (session,) = TapeReader(path).sessions()
    assert session.complete
    assert list(session.events[1:-1]) == sent
    assert [
        e.response.body for e in session.events[1:-1] if isinstance(e, Exchange) and e.response
    ] == [e.response.body for e in sent if e.response]
