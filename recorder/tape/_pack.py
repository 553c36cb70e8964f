"""Plain dict <-> msgpack bytes, with the delta stage for request bodies.

One ``Packer``/``Unpacker`` pair per session: both keep the few recent request
bodies that deltas refer to (see ``_delta.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgpack

from .._events import Exchange
from ._compact import KINDS, CompactDecoder, CompactEncoder, exchange_of
from ._delta import DeltaDecoder, DeltaEncoder
from ._frames import MAX_EVENT_BYTES
from ._limits import END_RESERVE, DecodeBudget, compress_bound
from ._plain_fields import Plain
from ._typed import typed_parts

T = TypeVar("T")


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
        """Unpack one event; raises ``ValueError`` for anything but a valid map."""
        return self._unpack(data, self._compact.decode)

    def unpack_event(self, data: bytes) -> Plain | Exchange:
        """``unpack``, except that a compact exchange comes as the ``Exchange`` that
        ``from_plain`` would make of its plain map (``TapeError`` where it would raise)."""
        try:  # the usual exchange, its shape checked as it is decoded
            parts = typed_parts(data, self._compact, self._delta, self._budget.charge)
        except (TypeError, IndexError) as exc:  # (as ``_unpack``)
            raise ValueError(f"malformed compact exchange ({exc})") from exc
        if parts is not None:
            return exchange_of(*parts)
        return self._unpack(data, self._compact.exchange)

    def _unpack(self, data: bytes, compact: Callable[..., T]) -> Plain | T:
        plain = self._load(data)
        if type(kind := plain.get("k")) is str and kind in KINDS:
            try:
                return compact(plain, len(data), self._delta, self._budget.charge)
            except (TypeError, IndexError) as exc:  # a shape the checks did not foresee
                raise ValueError(f"malformed compact exchange ({exc})") from exc
        return self._plain(plain, data)

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
        """A map that is not a compact exchange, its request body rebuilt from its delta."""
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
