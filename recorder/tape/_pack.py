"""Plain dict -> msgpack bytes -> event, with the delta stage for request bodies.

One ``Packer``/``Unpacker`` pair per session: both keep the few recent request
bodies that deltas refer to (see ``_delta.py``).  An exchange of any stored kind
is read the one way ``_typed.py`` reads it.
"""

from __future__ import annotations

from typing import Any

import msgpack

from .._events import Exchange
from ._codec import Plain, to_plain
from ._compact import KINDS, CompactEncoder, exchange_of
from ._delta import DeltaDecoder, DeltaEncoder
from ._frames import MAX_EVENT_BYTES
from ._limits import END_RESERVE, DecodeBudget, compress_bound
from ._typed import PREFIX, CompactDecoder, stored_exchange


class Packer:
    """Plain event -> msgpack bytes, delta-encoding request bodies.

    ``budget`` counts the session's decoded bytes as its reader will; an event
    past it is refused (``ValueError``) with the session's state untouched.
    Exchanges are stored compact (``_compact.py``)."""

    def __init__(self, budget: DecodeBudget | None = None) -> None:
        self._delta = DeltaEncoder()
        self._budget = budget if budget is not None else DecodeBudget()
        self._compact = CompactEncoder()

    def pack(self, plain: Plain, *, last: bool = False) -> bytes:
        """Pack one event; raises ``TypeError``/``ValueError``/``OverflowError``
        for values msgpack cannot hold or a reader would refuse, leaving the
        session's state usable.  Only the ``last`` event may use the budget
        kept for the session's end."""
        request = plain.get("request")
        extra = 0
        mark = self._compact.headers.mark()
        try:
            if plain.get("k") == "exchange":
                plain, extra = self._compact.encode(plain, self._delta)
            elif request is not None:
                ref, middle = self._delta.encode(request["body"])
                if ref is not None:
                    extra = len(request["body"]) - len(middle)
                    plain = {**plain, "request": {**request, "body": middle, "base": ref}}
            packed: bytes = msgpack.packb(plain, use_bin_type=True)
            if compress_bound(len(packed)) > MAX_EVENT_BYTES:
                raise ValueError(
                    f"event packs to {len(packed)} bytes; its frame could pass the "
                    f"{MAX_EVENT_BYTES}-byte limit a reader accepts"
                )
            self._budget.charge(len(packed) + extra, reserve=0 if last else END_RESERVE)
        except BaseException:
            # The encoder already counts this body as sent, but it never will be.
            # A fresh encoder only refers to bodies written after this point,
            # which the reader's decoder also holds as its most recent ones.
            self._delta = DeltaEncoder()
            self._compact.headers.rollback(mark)
            raise
        return packed


class Unpacker:
    """msgpack bytes -> plain event, undoing the delta stage.

    ``budget`` bounds the decoded size of each event and of the session: an
    event past it is refused (``ValueError``) before its body is rebuilt."""

    def __init__(self, budget: DecodeBudget | None = None) -> None:
        self._delta = DeltaDecoder()
        self._budget = budget if budget is not None else DecodeBudget()
        self._compact = CompactDecoder()

    def unpack(self, data: bytes) -> Plain:
        """``unpack_event``'s event as a plain map (an exchange's as ``to_plain`` makes it)."""
        event = self.unpack_event(data)
        return to_plain(event) if isinstance(event, Exchange) else event

    def unpack_event(self, data: bytes) -> Plain | Exchange:
        """Unpack one event: an exchange (of any stored kind) as its ``Exchange``, any
        other event as its plain map.  ``ValueError`` for anything but a valid map,
        ``TapeError`` for a malformed exchange."""
        loaded = None
        if not data.startswith(PREFIX):  # (the usual exchange is decoded from the frame)
            loaded = self._load(data)
            kind = loaded.get("k")
            if not (type(kind) is str and kind in KINDS):
                return self._plain(loaded, data)
        x = stored_exchange(data, loaded, self._delta.base_length)
        try:
            parts = self._compact.parts(x, len(data), self._delta, self._budget.charge)
        except (TypeError, IndexError) as exc:  # a shape the checks did not foresee
            raise ValueError(f"malformed compact exchange ({exc})") from exc
        return exchange_of(parts)

    @staticmethod
    def _load(data: bytes) -> Plain:
        try:
            plain: Any = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except (ValueError, msgpack.UnpackException) as exc:
            raise ValueError(f"bad msgpack ({type(exc).__name__}: {exc})") from exc
        if not isinstance(plain, dict):
            raise ValueError(f"event is a msgpack {type(plain).__name__}, not a map")
        return plain

    def _plain(self, plain: Plain, data: bytes) -> Plain:
        """A map that is not an exchange; one carrying a request map (an event a newer
        minor version may add) has its body rebuilt from its delta, as the packer
        delta-encodes any such map, so that later deltas refer to the bodies they mean."""
        request = plain.get("request")
        if request is not None:
            if not isinstance(request, dict):
                raise ValueError("request is not a map")
            body = request.get("body")
            if not isinstance(body, bytes):
                raise ValueError("request body is not bytes")
            ref = request.pop("base", None)
            if ref is not None and not (
                isinstance(ref, list) and len(ref) == 3 and all(type(x) is int for x in ref)
            ):
                raise ValueError("request body delta is not [back, prefix, suffix]")
            self._budget.charge(len(data) - len(body) + self._delta.size(ref, body))
            request["body"] = self._delta.decode(ref, body)
        else:
            self._budget.charge(len(data))
        return plain
