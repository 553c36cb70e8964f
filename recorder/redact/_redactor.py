"""Keeping secrets off tapes: the Redactor, which masks what the secret scanner finds.

One table of rules (``DEFAULT_RULES``) serves both jobs: the recording side
masks what the rules find before anything is written or fingerprinted, and
``evaltape lint`` reports what the same rules find in a finished tape.

Secrets found in bodies, URLs and header values are replaced by a mask of the
*same byte length* (``REDACTED`` padded with ``*``).  Keeping the length means
a response body recorded as many chunks is redacted over the joined body and
cut back at the very same offsets: the chunk count, every chunk's time and
every chunk's length stay as recorded, and a secret split across chunks is
masked in each of them.  Masks hold only ASCII letters and ``*`` and start
and end where the secret did, so a redacted JSON string stays a valid JSON
string.  Headers named in ``header_names`` (authorization, cookies, API key
headers) are replaced whole by ``[REDACTED]``.

Content-encoded bodies (gzip, deflate, zstd) are decoded, redacted and, if
anything changed, encoded again; the new encoded bytes are cut into as many
chunks as were recorded, in proportion to the recorded chunk sizes, and the
content-length header is corrected.

Every rule is a compiled regular expression anchored on a literal, run once
over the data, so redaction is linear in the body size.  The built-in rules
are tried only where ``bytes.find`` sees one of their leading literals, and
no rule runs over data shorter than its shortest match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

import attrs
import msgspec

from .._events import (
    Assembled,
    Chunk,
    Event,
    Exchange,
    HarnessEvent,
    Headers,
    Request,
    Response,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    WorkspaceSnapshot,
    with_assembled,
)
from ._bodies import (
    cut_at,
    decode_body,
    encode_body,
    header_value,
    set_length,
    split_like,
    unreadable_marker,
    without_encoding,
)
from ._events import redact_event
from ._rules import (
    DEFAULT_HEADER_NAME_PATTERN,
    DEFAULT_HEADER_NAMES,
    DEFAULT_RULES,
    SecretRule,
)
from ._scan import (
    Finding,
    Scanner,
    compile_allow,
    compile_header_pattern,
    compile_rules,
    longest_match,
    looks_random,
    scan_body,
    scan_pairs,
    value_spans,
)
from ._views import views

HEADER_MARKER = "[REDACTED]"
"""What a redacted header's value becomes."""

KNOWN_SECRET = "known secret (from the environment)"
"""The kind reported for a match of ``Redactor.values``."""

MASK_WORD = b"REDACTED"
"""The word a same-length mask starts with; the rest of the mask is ``*``."""


@attrs.frozen(kw_only=True)
class Located:
    """A finding inside an event, with a human description of where."""

    kind: str
    """What kind of secret."""
    where: str
    """Where in the event, e.g. "request header authorization"."""
    secret: str
    """The secret text (callers show a masked preview, never this)."""


_CLEAN_KEPT = 4096
"""Most secret-free header values a redactor remembers (then it starts over)."""


def mask(length: int) -> bytes:
    """The same-length replacement of a secret: ``REDACTED`` then ``*``."""
    return (MASK_WORD + b"*" * max(0, length - len(MASK_WORD)))[:length]


# -- the redactor ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Redactor:
    """Finds and masks secrets; configurable, immutable, safe to share.

    ``default_redactor()`` gives the built-in rules; ``extended(...)`` adds
    header names, patterns and allow-list entries to a redactor.
    """

    rules: tuple[SecretRule, ...] = DEFAULT_RULES
    """Secret shapes searched in bodies, URLs, header values and text."""
    header_names: frozenset[str] = DEFAULT_HEADER_NAMES
    """Header names (lower case) whose values are replaced whole."""
    header_name_pattern: str = DEFAULT_HEADER_NAME_PATTERN
    """Regular expression (case-insensitive search) of further such names."""
    allow: tuple[str, ...] = ()
    """Regular expressions; a secret that fully matches one is left alone
    (e.g. a published test key)."""
    values: tuple[str, ...] = ()
    """Known secrets (e.g. API keys from the environment), masked wherever they occur."""
    _compiled: tuple[Scanner, ...] = attrs.field(init=False, repr=False, eq=False)
    _allowed: tuple[re.Pattern[bytes], ...] = attrs.field(init=False, repr=False, eq=False)
    _header_re: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)
    _clean: set[str] = attrs.field(init=False, repr=False, eq=False)
    """Header values found to hold no secret (they recur in every exchange)."""

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_clean", set())
        object.__setattr__(self, "_compiled", tuple(compile_rules(r) for r in self.rules))
        object.__setattr__(self, "_allowed", compile_allow(self.allow))
        object.__setattr__(self, "_header_re", compile_header_pattern(self.header_name_pattern))

    def extended(
        self,
        *,
        headers: Iterable[str] = (),
        patterns: Iterable[str | SecretRule] = (),
        allow: Iterable[str] = (),
        values: Iterable[str] = (),
    ) -> Redactor:
        """A copy with more header names, secret patterns, allow-list entries and known secrets.

        A plain string pattern becomes a rule of kind "custom pattern".
        """
        rules = tuple(
            p if isinstance(p, SecretRule) else SecretRule(kind="custom pattern", pattern=p)
            for p in patterns
        )
        return attrs.evolve(
            self,
            rules=self.rules + rules,
            header_names=self.header_names | {h.lower() for h in headers},
            allow=self.allow + tuple(allow),
            values=self.values + tuple(v for v in values if v and v not in self.values),
        )

    @property
    def longest(self) -> int:
        """Most bytes one rule's pattern or known value spans (a rule's ``run`` may
        carry its secret on to the end of a longer key)."""
        lengths = [longest_match(s) for s in self._compiled]
        lengths += [len(v.encode("utf-8", "surrogateescape")) for v in self.values]
        return max(lengths, default=0)

    # -- finding ------------------------------------------------------------

    def is_secret_header(self, name: str) -> bool:
        """True if a header of this name is redacted whole."""
        lower = name.lower()
        return lower in self.header_names or self._header_re.search(lower) is not None

    def _spans(
        self,
        data: bytes,
        pos: tuple[int, ...] = (),
        every: list[tuple[int, int, int]] | None = None,
    ) -> Iterator[tuple[int, int, int]]:
        """(start, end, rule index) of each secret found; rule ``i`` searches from
        ``pos[i]`` on (0 without ``pos``), and ``every`` gets (start, end, index) of
        every match, secret or not (``_redact_delta.py``)."""
        lowered = data.lower() if any(r.lowercase for r in self.rules) else data
        found: dict[bytes, tuple[int, list[int]]] = {}
        found_lowered: dict[bytes, tuple[int, list[int]]] = {}
        for index, (rule, scanner) in enumerate(zip(self.rules, self._compiled, strict=True)):
            named = "s" in scanner.regex.groupindex
            start = pos[index] if pos else 0
            if rule.lowercase:
                matches = scanner.finditer(lowered, found_lowered, start)
            else:
                matches = scanner.finditer(data, found, start)
            for m, tail_end in matches:
                if every is not None:
                    every.append((m.start(), tail_end, index))
                group = "s" if named and m.start("s") >= 0 else 0
                start, end = m.span(group)
                if end == m.end():  # the secret goes on through the rule's tail
                    end = tail_end
                secret = data[start:end]
                if end <= start or secret == mask(end - start):
                    continue
                if rule.generic and not looks_random(secret):
                    continue
                if any(a.fullmatch(secret) for a in self._allowed):
                    continue
                yield start, end, index

    def _all_spans(self, data: bytes) -> Iterator[tuple[int, int, int]]:
        yield from self._spans(data)
        yield from value_spans(data, self.values, len(self.rules))

    def scan_bytes(self, data: bytes) -> tuple[Finding, ...]:
        """Secret-shaped spans of ``data``, in order, overlaps merged.

        Known values and rules are also matched in the views of ``data`` a
        reader would see (JSON escapes undone, a stream's event texts joined);
        a secret found there is reported at each raw range that spells it, even in
        one piece (its context, e.g. "Bearer ", may end the event before)."""
        spans = list(self._all_spans(data))
        for view in views(data):
            for start, end, index in self._all_spans(view.data):
                spans += [(lo, hi, index) for lo, hi in view.to_raw(start, end)]
        spans.sort()
        merged: list[list[int]] = []
        for start, end, index in spans:
            if merged and start < merged[-1][1]:
                last = merged[-1]
                last[1] = max(last[1], end)
                last[2] = min(last[2], index)
            else:
                merged.append([start, end, index])
        return tuple(Finding(kind=self._kind(i), start=s, end=e) for s, e, i in merged)

    def _kind(self, index: int) -> str:
        return self.rules[index].kind if index < len(self.rules) else KNOWN_SECRET

    # -- masking --------------------------------------------------------------

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every secret replaced by a same-length mask."""
        findings = self.scan_bytes(data)
        if not findings:
            return data
        parts: list[bytes] = []
        pos = 0
        for f in findings:
            parts.append(data[pos : f.start])
            parts.append(mask(f.end - f.start))
            pos = f.end
        parts.append(data[pos:])
        return b"".join(parts)

    def redact_text(self, text: str) -> str:
        """``text`` (URL, header value, message) with its secrets masked."""
        raw = text.encode("utf-8", "surrogateescape")
        red = self.redact_bytes(raw)
        return text if red is raw else red.decode("utf-8", "surrogateescape")

    def redact_headers(self, headers: Headers) -> Headers:
        """Secret headers replaced whole; secrets in other values masked."""
        out = []
        clean = self._clean
        for name, value in headers:
            if self.is_secret_header(name):
                out.append((name, HEADER_MARKER if value else value))
            elif value in clean:
                out.append((name, value))
            else:
                red = self.redact_text(value)
                if red is value:  # only values without secrets are remembered
                    if len(clean) >= _CLEAN_KEPT:
                        clean.clear()
                    clean.add(value)
                out.append((name, red))
        return tuple(out)

    def _redact_body(self, chunks: tuple[Chunk, ...], encoding: str) -> tuple[Chunk, ...]:
        joined = b"".join(c.data for c in chunks)
        decoded = decode_body(joined, encoding)
        if decoded is None and joined:  # cannot be checked: not written raw
            marker = unreadable_marker(encoding)
            return tuple(
                msgspec.structs.replace(c, data=b"" if i else marker) for i, c in enumerate(chunks)
            )
        if decoded is None or decoded is joined:
            red = self.redact_bytes(joined)
            return chunks if red is joined else cut_at(red, chunks)
        red = self.redact_bytes(decoded)
        if red is decoded:
            return chunks
        return split_like(encode_body(red, encoding), chunks)

    def redact_request(self, request: Request) -> Request:
        """A copy of ``request`` with URL, headers and body redacted."""
        encoding = header_value(request.headers, "content-encoding")
        body = self._redact_body((Chunk(at=0.0, data=request.body),), encoding)[0].data
        headers = self.redact_headers(request.headers)
        if body is not request.body and decode_body(request.body, encoding) is None:
            headers = without_encoding(headers, len(body))
        elif body is not request.body and len(body) != len(request.body):
            headers = set_length(headers, len(body))
        return attrs.evolve(request, url=self.redact_text(request.url), headers=headers, body=body)

    def redact_response(self, response: Response) -> Response:
        """A copy of ``response`` with headers and body chunks redacted."""
        encoding = header_value(response.headers, "content-encoding")
        chunks = self._redact_body(response.chunks, encoding)
        headers = self.redact_headers(response.headers)
        if chunks is not response.chunks:
            size = sum(len(c.data) for c in chunks)
            if chunks[0].data == unreadable_marker(encoding):
                headers = without_encoding(headers, size)
            elif size != sum(len(c.data) for c in response.chunks):
                headers = set_length(headers, size)
        redacted = attrs.evolve(response, headers=headers, chunks=chunks)
        if response.assembled is None:
            return redacted
        return with_assembled(redacted, self.redact_assembled(response.assembled))

    def redact_assembled(self, assembled: Assembled) -> Assembled:
        """A copy of a response's assembled message with every text redacted."""
        text = self.redact_text
        return attrs.evolve(
            assembled,
            model=text(assembled.model),
            response_id=text(assembled.response_id),
            output_text=text(assembled.output_text),
            thinking=text(assembled.thinking),
            finish_reason=text(assembled.finish_reason),
            tool_calls=tuple(tuple(map(text, c)) for c in assembled.tool_calls),  # type: ignore[misc]
            error=text(assembled.error),
        )

    def redact_exchange(self, exchange: Exchange) -> Exchange:
        """A copy of ``exchange`` with request and response redacted."""
        response = exchange.response
        error = exchange.error
        return attrs.evolve(
            exchange,
            request=self.redact_request(exchange.request),
            response=None if response is None else self.redact_response(response),
            error=None
            if error is None
            else attrs.evolve(error, message=self.redact_text(error.message)),
        )

    def redact_event(self, event: Event) -> Event:
        """A copy of any event with its secrets masked (see ``_redact_events``)."""
        return redact_event(self, event)

    # -- scanning whole events (lint) ---------------------------------------

    def scan_event(self, event: Event) -> tuple[Located, ...]:
        """Every secret-shaped string in ``event``, with where it sits."""
        found: list[Located] = []

        def text(where: str, value: object) -> None:
            if isinstance(value, str) and value:
                data(where, value.encode("utf-8", "surrogateescape"))

        def data(where: str | Callable[[int], str], raw: bytes) -> None:
            for f in self.scan_bytes(raw):
                place = where(f.start) if callable(where) else where
                secret = raw[f.start : f.end].decode("utf-8", "replace")
                found.append(Located(kind=f.kind, where=place, secret=secret))

        def headers(side: str, hs: Headers) -> None:
            for name, value in hs:
                if self.is_secret_header(name) and value and value != HEADER_MARKER:
                    found.append(
                        Located(kind=f"{name} header", where=f"{side} header {name}", secret=value)
                    )
                else:
                    text(f"{side} header {name}", value)

        if isinstance(event, Exchange):
            req = event.request
            text("request url", req.url)
            headers("request", req.headers)
            scan_body(data, "request body", (Chunk(at=0.0, data=req.body),), req.headers)
            if event.response is not None:
                headers("response", event.response.headers)
                scan_body(data, "response body", event.response.chunks, event.response.headers)
                assembled = event.response.assembled
                if assembled is not None:
                    for value in (
                        assembled.output_text,
                        assembled.thinking,
                        assembled.error,
                        *(v for c in assembled.tool_calls for v in c),
                    ):
                        text("assembled response", value)
            if event.error is not None:
                text("transport error message", event.error.message)
        elif isinstance(event, SessionStarted):
            for field in attrs.fields(SessionStarted):
                if field.name != "metadata":
                    text(f"session header {field.name}", getattr(event, field.name))
            scan_pairs(text, "metadata", event.metadata)
        elif isinstance(event, HarnessEvent):
            text("harness event name", event.name)
            scan_pairs(text, f"harness event {event.name!r} field", event.fields)
        elif isinstance(event, RunnerFact):
            text("runner fact message", event.message)
        elif isinstance(event, SessionEnded):
            text("session end reason", event.reason)
        elif isinstance(event, WorkspaceSnapshot):
            for entry in event.files:
                text("workspace file name", entry.path)
                data(f"workspace file {entry.path}", entry.data)
        return tuple(found)


def default_redactor() -> Redactor:
    """A redactor with the built-in header names, rules and no allow-list."""
    return Redactor()
