"""Plain dict <-> msgpack bytes, with the delta stage for request bodies.

One ``Packer``/``Unpacker`` pair per session: both keep the few recent request
bodies that deltas refer to (see ``_delta.py``).
"""

from __future__ import annotations

from typing import Any

import msgpack

from recorder._codec import Plain
from recorder._delta import DeltaDecoder, DeltaEncoder


class Packer:
    """Plain event -> msgpack bytes, delta-encoding request bodies."""

    def __init__(self) -> None:
        self._delta = DeltaEncoder()

    def pack(self, plain: Plain) -> bytes:
        request = plain.get("request")
        if request is not None:
            ref, middle = self._delta.encode(request["body"])
            if ref is not None:
                plain = {**plain, "request": {**request, "body": middle, "base": ref}}
        packed: bytes = msgpack.packb(plain, use_bin_type=True)
        return packed


class Unpacker:
    """msgpack bytes -> plain event, undoing the delta stage."""

    def __init__(self) -> None:
        self._delta = DeltaDecoder()

    def unpack(self, data: bytes) -> Plain:
        plain: Any = msgpack.unpackb(data, raw=False, strict_map_key=True)
        if not isinstance(plain, dict):
            raise ValueError("event is not a map")
        request = plain.get("request")
        if isinstance(request, dict):
            body = request.get("body")
            if not isinstance(body, bytes):
                raise ValueError("request body is not bytes")
            request["body"] = self._delta.decode(request.pop("base", None), body)
        return plain
