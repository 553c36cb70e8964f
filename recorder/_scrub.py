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
  lands in today's.
- User rules (``ScrubRule``: a regular expression and its replacement) apply to
  request bodies only: the words the harness sends, tool results included.

What the real API receives is never changed: only the copy written to the
tape, and the copy a replay matches, are scrubbed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Protocol

import attrs

from evaltape.recorder._events import Chunk, Exchange, Headers, Request, Response

WORKSPACE_PLACEHOLDER = "<workspace>"
"""What an attempt's workspace path reads as on a tape."""


class Redacts(Protocol):
    """The next stage: a redactor (``recorder.Redactor`` fits)."""

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


@attrs.frozen(kw_only=True)
class Scrubber:
    """Scrubs an exchange, then hands it to ``redactor``; see the module docstring."""

    redactor: Redacts
    """The redaction stage that follows."""
    workspace: tuple[str, ...] = ()
    """The attempt's workspace path (and its resolved form, if different)."""
    rules: tuple[ScrubRule, ...] = ()
    """User rules for request bodies, applied in order after the workspace."""
    _paths: tuple[bytes, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        found: list[bytes] = []
        for path in self.workspace:
            found.extend(s for s in _spellings(path.rstrip("/\\")) if s not in found)
        object.__setattr__(self, "_paths", tuple(sorted(found, key=len, reverse=True)))

    def scrub_text(self, data: bytes) -> bytes:
        """``data`` with the workspace path replaced (no user rules)."""
        placeholder = WORKSPACE_PLACEHOLDER.encode()
        for path in self._paths:
            if path in data:
                data = data.replace(path, placeholder)
        return data

    def scrub_body(self, body: bytes) -> bytes:
        """A request body: the workspace path, then every user rule."""
        body = self.scrub_text(body)
        for rule in self.rules:
            body = rule.apply(body)
        return body

    def restore(self, data: bytes) -> bytes:
        """``data`` with the placeholder turned back into the workspace path."""
        if not self.workspace:
            return data
        return data.replace(WORKSPACE_PLACEHOLDER.encode(), self.workspace[0].encode("utf-8"))

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
        chunks = tuple(attrs.evolve(c, data=self.scrub_text(c.data)) for c in response.chunks)
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
        return chunk if data == chunk.data else attrs.evolve(chunk, data=data)


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
