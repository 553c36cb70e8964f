"""Scrubbing: text that differs on every run, replaced by fixed placeholders.

An attempt works in a fresh folder whose path changes from run to run, and a
tool that prints an absolute path (or the time) puts that text into the next
request.  Recorded as it is, the tape would never match the next replay even
though nothing in the harness changed.  ``Scrubber`` sits where the redactor
sits (it is a ``redact_exchange`` stage of its own, then redacts): the
recording transport writes scrubbed exchanges, and the replay transport
scrubs each request it receives the same way before matching it.

- The attempt's workspace path becomes ``WORKSPACE_PLACEHOLDER`` in request
  bodies and URLs and in plain (not content-encoded) response bodies; when a
  replay serves a response, ``restore`` turns the placeholder back into the
  current attempt's path, so a tool call the model aimed at the old folder
  lands in today's.  The forms tools derive from a path are placeholders of
  their own (``DERIVED_PLACEHOLDERS``): slashes and dots turned into dashes
  (``-tmp-evaltape-kz8gnlu-``, how some coding agents name a project folder),
  percent-encoded, and ``~``-relative.
- User rules (``ScrubRule``: a regular expression and its replacement) apply to
  request bodies only: the words the harness sends, tool results included.  A
  replay applies them to the recorded request too (``rescrub_exchange``), so a
  rule added after recording fixes old tapes.

What the real API receives is never changed: only the copy written to the
tape, and the copy a replay matches, are scrubbed.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterable
from typing import Protocol

import attrs
import msgspec

from .._events import Chunk, Exchange, Headers, Request, Response

WORKSPACE_PLACEHOLDER = "<workspace>"
"""What an attempt's workspace path reads as on a tape."""

DERIVED_PLACEHOLDERS = {
    "dashed": "<workspace-dashed>",
    "percent": "<workspace-percent>",
    "home": "<workspace-home>",
}
"""What the derived forms of the workspace path read as on a tape: every character
but letters and digits turned into ``-`` (``/tmp/evaltape-ab_1`` reads
``-tmp-evaltape-ab-1``), percent-encoded (``%2Ftmp%2Fevaltape-ab_1``), and relative
to the home folder (``~/...``, where the workspace lies under it)."""


class Redacts(Protocol):
    """What redacts an exchange: a ``Redactor`` fits (the recording transport's and a
    scrubber's next stage)."""

    def redact_exchange(self, exchange: Exchange) -> Exchange:
        """A copy of ``exchange`` with secrets removed."""


class ScrubError(ValueError):
    """A scrub rule was refused (a regular expression that does not compile)."""


@attrs.frozen(kw_only=True)
class ScrubRule:
    """Replace every match of ``pattern`` in request bodies with ``replacement``."""

    pattern: str
    """A Python regular expression, searched in the request body's text."""
    replacement: str
    """What each match becomes (``re.sub`` syntax: ``\\1`` refers to a group)."""
    _compiled: re.Pattern[bytes] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern.encode("utf-8"))
            compiled.sub(self.replacement.encode("utf-8"), b"")
        except (re.error, IndexError) as exc:
            raise ScrubError(f"scrub rule {self.pattern!r}: {exc}") from exc
        object.__setattr__(self, "_compiled", compiled)

    def apply(self, data: bytes) -> bytes:
        """``data`` with every match replaced."""
        return self._compiled.sub(self.replacement.encode("utf-8"), data)


def _spellings(path: str) -> tuple[bytes, ...]:
    """The ways ``path`` can appear in a body: as is, JSON-escaped, longest first."""
    forms = {path, path.replace("\\", "\\\\"), path.replace("/", "\\/")}
    return tuple(sorted((f.encode("utf-8") for f in forms if f), key=len, reverse=True))


_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def derived_forms(path: str, home: str = "") -> tuple[tuple[str, str], ...]:
    """``(form, placeholder)`` for the forms tools derive from a workspace ``path``.

    Only forms that differ from the path itself and are long enough to be
    unambiguous are listed (see ``DERIVED_PLACEHOLDERS``).
    """
    path = path.rstrip("/\\")
    forms = [
        (_NOT_ALNUM.sub("-", path), DERIVED_PLACEHOLDERS["dashed"]),
        (urllib.parse.quote(path, safe=""), DERIVED_PLACEHOLDERS["percent"]),
    ]
    home = home.rstrip("/")
    if home and path.startswith(home + "/"):
        forms.append(("~" + path[len(home) :], DERIVED_PLACEHOLDERS["home"]))
    return tuple((f, p) for f, p in forms if f != path and len(f) >= 8)


@attrs.frozen(kw_only=True)
class Scrubber:
    """Scrubs an exchange, then hands it to ``redactor``; see the module docstring."""

    redactor: Redacts
    """The redaction stage that follows."""
    workspace: tuple[str, ...] = ()
    """The attempt's workspace path (and its resolved form, if different)."""
    rules: tuple[ScrubRule, ...] = ()
    """User rules for request bodies, applied in order after the workspace."""
    home: str = ""
    """The home folder, for the ``~``-relative form of the workspace path ("" for none)."""
    _paths: tuple[tuple[bytes, bytes], ...] = attrs.field(init=False, repr=False, eq=False)
    _restores: tuple[tuple[bytes, bytes], ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        found: dict[bytes, bytes] = {}
        placeholder = WORKSPACE_PLACEHOLDER.encode()
        for path in self.workspace:
            for spelling in _spellings(path.rstrip("/\\")):
                found.setdefault(spelling, placeholder)
        for path in self.workspace:
            for form, derived in derived_forms(path, self.home):
                for spelling in _spellings(form):
                    found.setdefault(spelling, derived.encode())
        ordered = sorted(found.items(), key=lambda kv: len(kv[0]), reverse=True)
        object.__setattr__(self, "_paths", tuple(ordered))
        restores: list[tuple[bytes, bytes]] = []
        if self.workspace:  # placeholder -> today's spelling, worked out once, not per chunk
            path = self.workspace[0]
            restores.append((WORKSPACE_PLACEHOLDER.encode(), path.encode("utf-8")))
            for form, derived in derived_forms(path, self.home):
                restores.append((derived.encode(), form.encode("utf-8")))
        object.__setattr__(self, "_restores", tuple(restores))

    def scrub_text(self, data: bytes) -> bytes:
        """``data`` with the workspace path (and its derived forms) replaced (no user rules)."""
        for path, placeholder in self._paths:
            if path in data:
                data = data.replace(path, placeholder)
        return data

    def rescrub_exchange(self, exchange: Exchange) -> Exchange:
        """A recorded exchange with today's user rules applied to its request body.

        A replay matches against this, so a rule added after recording rewrites
        the recorded request as it rewrites the one sent now.
        """
        body = exchange.request.body
        for rule in self.rules:
            body = rule.apply(body)
        if body == exchange.request.body:
            return exchange
        request = attrs.evolve(
            exchange.request, body=body, headers=_resized(exchange.request.headers, body)
        )
        return attrs.evolve(exchange, request=request)

    def scrub_body(self, body: bytes) -> bytes:
        """A request body: the workspace path, then every user rule."""
        body = self.scrub_text(body)
        for rule in self.rules:
            body = rule.apply(body)
        return body

    def restore(self, data: bytes) -> bytes:
        """``data`` with each placeholder turned back into today's workspace path (or form)."""
        if not self._restores or b"<workspace" not in data:
            return data
        for placeholder, spelling in self._restores:
            data = data.replace(placeholder, spelling)
        return data

    def scrub_request(self, request: Request) -> Request:
        """A copy of ``request`` whose body and URL are scrubbed."""
        body = self.scrub_body(request.body)
        url = self.scrub_text(request.url.encode("utf-8")).decode("utf-8")
        if body == request.body and url == request.url:
            return request
        return attrs.evolve(request, url=url, body=body, headers=_resized(request.headers, body))

    def scrub_response(self, response: Response) -> Response:
        """A copy of ``response`` with the workspace path scrubbed from a plain body."""
        if not self._paths or _encoded(response.headers):
            return response
        chunks = tuple(
            msgspec.structs.replace(c, data=self.scrub_text(c.data)) for c in response.chunks
        )
        if all(a.data == b.data for a, b in zip(chunks, response.chunks, strict=True)):
            return response
        body = b"".join(c.data for c in chunks)
        return attrs.evolve(response, chunks=chunks, headers=_resized(response.headers, body))

    def redact_exchange(self, exchange: Exchange) -> Exchange:
        """Scrub ``exchange``, then redact it."""
        response = exchange.response
        scrubbed = attrs.evolve(
            exchange,
            request=self.scrub_request(exchange.request),
            response=None if response is None else self.scrub_response(response),
        )
        return self.redactor.redact_exchange(scrubbed)

    def restore_chunk(self, chunk: Chunk, headers: Headers) -> Chunk:
        """A served chunk with the placeholder restored (plain bodies only)."""
        if _encoded(headers):
            return chunk
        data = self.restore(chunk.data)
        return chunk if data == chunk.data else msgspec.structs.replace(chunk, data=data)


def _encoded(headers: Iterable[tuple[str, str]]) -> bool:
    """True when the body is content-encoded (gzip, br...): its bytes are not text."""
    return any(
        name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity")
        for name, value in headers
    )


def _resized(headers: Headers, body: bytes) -> Headers:
    """``headers`` with ``content-length`` set to ``len(body)`` where it was given."""
    return tuple(
        (name, str(len(body))) if name.lower() == "content-length" else (name, value)
        for name, value in headers
    )


def workspace_spellings(path: str) -> tuple[str, ...]:
    """A workspace path as given and resolved (they differ where /tmp is a link)."""
    real = os.path.realpath(path)
    return (path,) if real == path else (path, real)
