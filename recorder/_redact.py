"""Keeping secrets off tapes: redaction of exchanges, and the secret scanner.

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

import functools
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import attrs
import zstandard

from evaltape.recorder._errors import TapeError
from evaltape.recorder._events import (
    Chunk,
    Event,
    Exchange,
    HarnessEvent,
    Headers,
    Request,
    Response,
    RunnerFact,
    Scalar,
    SessionEnded,
    SessionStarted,
    WorkspaceSnapshot,
)

HEADER_MARKER = "[REDACTED]"
"""What a redacted header's value becomes."""

MASK_WORD = b"REDACTED"
"""The word a same-length mask starts with; the rest of the mask is ``*``."""


class RedactionError(TapeError):
    """A redaction rule is malformed (bad regular expression, empty kind)."""


@attrs.frozen(kw_only=True)
class SecretRule:
    """One kind of secret, recognised by a regular expression.

    If the pattern has a group named ``s`` only that group is the secret (the
    rest is context such as ``Bearer`` or a JSON key); otherwise the whole
    match is.
    """

    kind: str
    """What the secret is, for reports, e.g. "OpenAI API key"."""
    pattern: str
    """Regular expression (Python syntax) matched against the raw bytes."""
    ignore_case: bool = False
    """Match letters in either case."""
    lowercase: bool = False
    """Match against an ASCII-lowercased copy of the data (the pattern is
    written in lower case): case-insensitive and much faster than
    ``ignore_case`` on large bodies."""
    generic: bool = False
    """A loose pattern: the secret must also look random (length >= 16, letters
    and digits, at least 3.5 bits of entropy per character)."""


@attrs.frozen(kw_only=True)
class Finding:
    """A secret-shaped span of some data."""

    kind: str
    """The rule's kind."""
    start: int
    """Byte offset where the secret starts."""
    end: int
    """Byte offset just past the secret."""


@attrs.frozen(kw_only=True)
class Located:
    """A finding inside an event, with a human description of where."""

    kind: str
    """What kind of secret."""
    where: str
    """Where in the event, e.g. "request header authorization"."""
    secret: str
    """The secret text (callers show a masked preview, never this)."""


_TOKEN = r"[A-Za-z0-9_-]"

DEFAULT_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        kind="private key (PEM)",
        pattern=(
            r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----"
            r"(?:(?!-----END)(?:[A-Za-z0-9+/=\s:,.-]|\\[nrt])){0,65536}"
            r"(?:-----END[A-Z ]{0,40}PRIVATE KEY-----)?"
        ),
    ),
    SecretRule(kind="Anthropic API key", pattern=rf"sk-ant-{_TOKEN}{{20,}}"),
    SecretRule(kind="Langfuse key", pattern=r"pk-lf-[A-Za-z0-9-]{8,}"),
    SecretRule(kind="Langfuse key", pattern=r"sk-lf-[A-Za-z0-9-]{8,}"),
    SecretRule(
        kind="OpenAI API key",
        pattern=rf"sk-(?:proj-|svcacct-|admin-|None-)?{_TOKEN}{{20,}}",
    ),
    SecretRule(
        kind="AWS access key id",
        pattern=r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}(?![0-9A-Z])",
    ),
    SecretRule(kind="GitHub token", pattern=r"gh[pousr]_[A-Za-z0-9]{30,}"),
    SecretRule(kind="GitHub token", pattern=r"github_pat_[A-Za-z0-9_]{22,}"),
    SecretRule(kind="Google API key", pattern=rf"AIza{_TOKEN}{{35}}"),
    SecretRule(kind="Slack token", pattern=r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    SecretRule(
        kind="JWT",
        pattern=rf"eyJ{_TOKEN}{{8,}}\.eyJ{_TOKEN}{{8,}}\.{_TOKEN}*",
    ),
    SecretRule(
        kind="bearer token",
        pattern=r"bearer\s+(?P<s>[a-z0-9._~+/=-]{16,})",
        lowercase=True,
    ),
    SecretRule(
        kind="URL credential parameter",
        pattern=(
            r"[?&;](?:key|api[_-]?key|apikey|access[_-]?token|token|auth|secret|"
            r"client[_-]?secret|password|sig|signature|x-goog-api-key)="
            r"(?P<s>[^&#\s\"'\\<>]{8,})"
        ),
        lowercase=True,
    ),
    SecretRule(
        kind="secret-named JSON value",
        pattern=(
            r"(?:api[_-]?key|apikey|token|secret|password|passwd|credential|private[_-]?key)"
            r"\\?\"\s*:\s*\\?\"(?P<s>[^\"\\]{16,512})\\?\""
        ),
        lowercase=True,
        generic=True,
    ),
    SecretRule(
        kind="secret-named assignment",
        pattern=(
            r"(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?token|auth[_-]?token|"
            r"client[_-]?secret|password)\s*[=:]\s*['\"]?(?P<s>[a-z0-9_./+=-]{16,512})"
        ),
        lowercase=True,
        generic=True,
    ),
)
"""The built-in secret shapes, most specific first (the first rule covering a
span names it in reports)."""

_ANCHORS: dict[tuple[str, bool, bool], tuple[bytes, ...]] = {
    (rule.pattern, rule.lowercase, rule.ignore_case): anchors
    for rule, anchors in zip(
        DEFAULT_RULES,
        (
            (b"-----BEGIN",),
            (b"sk-",),
            (b"pk-lf-",),
            (b"sk-",),
            (b"sk-",),
            (),  # "A" then a few letters: the regex engine's own prefix search is as fast
            (),  # "gh", common in text: likewise
            (),
            (b"AIza",),
            (b"xox",),
            (b"eyJ",),
            (b"bearer",),
            (b"?", b"&", b";"),
            (b"api", b"token", b"secret", b"passw", b"credential", b"private"),
            (b"api", b"secret", b"access", b"auth", b"client", b"password"),
        ),
        strict=True,
    )
}
"""For built-in rules: literals one of which every match starts with.

Kept in step with ``DEFAULT_RULES`` by position: a rule whose pattern changes
needs its anchors checked (tests/test_redact_speed.py compares the results
with plain regex scans).

Python's regular expressions try an alternation of words at every position
of the data; finding these literals with ``bytes.find`` (once per literal
for all rules) and trying the pattern only there gives the same matches many
times faster."""

DEFAULT_HEADER_NAMES: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "x-goog-api-key",
        "anthropic-admin-key",
        "anthropic-admin-api-key",
        "x-amz-security-token",
    }
)
"""Headers whose whole value is replaced by ``[REDACTED]``."""

DEFAULT_HEADER_NAME_PATTERN = (
    r"(?:^|[-_])(?:api[-_]?key|key|token|access[-_]?token|auth[-_]?token|secret|"
    r"password|credentials?|session[-_]?id|admin[-_]?key)$"
)
"""Further header names redacted whole: any name ending in a key-like word
(``anthropic-admin-key``, ``x-auth-token``; ``x-ratelimit-remaining-tokens``
does not match)."""


_CLEAN_KEPT = 4096
"""Most secret-free header values a redactor remembers (then it starts over)."""


def mask(length: int) -> bytes:
    """The same-length replacement of a secret: ``REDACTED`` then ``*``."""
    return (MASK_WORD + b"*" * max(0, length - len(MASK_WORD)))[:length]


def _entropy(data: bytes) -> float:
    counts = Counter(data)
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(data: bytes) -> bool:
    return (
        len(data) >= 16
        and any(48 <= b <= 57 for b in data)
        and any(65 <= (b | 32) <= 122 for b in data)
        and _entropy(data) >= 3.5
    )


class _Scanner:
    """One rule's compiled pattern and the fastest exact way to run it."""

    def __init__(self, regex: re.Pattern[bytes], anchors: tuple[bytes, ...], shortest: int):
        self.regex = regex
        self.anchors = anchors  # every match starts with one of these; () if unknown
        self.shortest = shortest  # no match is shorter

    def finditer(self, data: bytes, found: dict[bytes, list[int]]) -> Iterator[re.Match[bytes]]:
        """The matches ``regex.finditer(data)`` gives; ``found`` caches where
        each anchor occurs in ``data``."""
        if len(data) < self.shortest:
            return
        if not self.anchors:
            yield from self.regex.finditer(data)
            return
        starts: list[int] = []
        for anchor in self.anchors:
            places = found.get(anchor)
            if places is None:
                places = found[anchor] = _occurrences(data, anchor)
            starts += places
        if not starts:
            return
        pos = 0
        for start in sorted(set(starts)):  # as finditer: leftmost match, then on past it
            if start >= pos:
                m = self.regex.match(data, start)
                if m is not None:
                    yield m
                    pos = m.end()


def _occurrences(data: bytes, literal: bytes) -> list[int]:
    out = []
    at = data.find(literal)
    while at >= 0:
        out.append(at)
        at = data.find(literal, at + 1)
    return out


@functools.lru_cache(maxsize=256)
def _shortest(pattern: bytes, flags: int) -> int:
    """Fewest bytes a match of ``pattern`` spans (0 if the parser cannot tell).

    Cached like ``re.compile`` caches: every recording builds a redactor."""
    try:
        low = re._parser.parse(pattern, flags).getwidth()[0]  # type: ignore[attr-defined]
    except Exception:  # a private parser: any surprise means "no bound"
        return 0
    return low if isinstance(low, int) and low > 0 else 0


def _compile(rule: SecretRule) -> _Scanner:
    if not rule.kind:
        raise RedactionError(f"redaction rule {rule.pattern!r} has no kind")
    try:
        regex = re.compile(rule.pattern.encode(), re.IGNORECASE if rule.ignore_case else 0)
    except (re.error, UnicodeEncodeError) as exc:
        raise RedactionError(f"redaction rule {rule.kind!r}: bad pattern: {exc}") from exc
    anchors = _ANCHORS.get((rule.pattern, rule.lowercase, rule.ignore_case), ())
    return _Scanner(regex, anchors, _shortest(regex.pattern, regex.flags))


def _compile_allow(patterns: tuple[str, ...]) -> tuple[re.Pattern[bytes], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p.encode()))
        except (re.error, UnicodeEncodeError) as exc:
            raise RedactionError(f"allow-list pattern {p!r}: {exc}") from exc
    return tuple(out)


def _compile_header_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise RedactionError(f"header name pattern {pattern!r}: {exc}") from exc


# -- content encodings --------------------------------------------------------


def _header(headers: Headers, name: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


def decode_body(data: bytes, encoding: str) -> bytes | None:
    """The decoded body for a ``content-encoding`` we know, else None.

    Identity returns ``data`` itself.  A stream cut short decodes as far as it
    goes.  Unknown encodings (e.g. ``br``) and undecodable data return None.
    """
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return data
    try:
        if enc in ("gzip", "x-gzip", "deflate"):
            wbits = 47 if enc != "deflate" else 15
            try:
                return zlib.decompressobj(wbits).decompress(data)
            except zlib.error:
                if enc != "deflate":
                    raise
                return zlib.decompressobj(-15).decompress(data)  # raw deflate
        if enc == "zstd":
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except (zlib.error, zstandard.ZstdError):
        return None
    return None


def _encode_body(data: bytes, encoding: str) -> bytes:
    enc = encoding.strip().lower()
    if enc in ("gzip", "x-gzip"):
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if enc == "deflate":
        return zlib.compress(data)
    if enc == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    return data


def _split_like(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` into ``len(chunks)`` pieces sized in proportion to ``chunks``."""
    total = sum(len(c.data) for c in chunks) or 1
    out: list[Chunk] = []
    pos = 0
    seen = 0
    for i, chunk in enumerate(chunks):
        seen += len(chunk.data)
        end = len(data) if i == len(chunks) - 1 else len(data) * seen // total
        out.append(attrs.evolve(chunk, data=data[pos:end]))
        pos = end
    return tuple(out)


def _cut_at(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` (same length as the joined chunks) at the chunks' offsets."""
    out: list[Chunk] = []
    pos = 0
    for chunk in chunks:
        end = pos + len(chunk.data)
        piece = data[pos:end]
        out.append(chunk if piece == chunk.data else attrs.evolve(chunk, data=piece))
        pos = end
    return tuple(out)


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
    _compiled: tuple[_Scanner, ...] = attrs.field(init=False, repr=False, eq=False)
    _allowed: tuple[re.Pattern[bytes], ...] = attrs.field(init=False, repr=False, eq=False)
    _header_re: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)
    _clean: set[str] = attrs.field(init=False, repr=False, eq=False)
    """Header values found to hold no secret (they recur in every exchange)."""

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_clean", set())
        object.__setattr__(self, "_compiled", tuple(_compile(r) for r in self.rules))
        object.__setattr__(self, "_allowed", _compile_allow(self.allow))
        object.__setattr__(self, "_header_re", _compile_header_pattern(self.header_name_pattern))

    def extended(
        self,
        *,
        headers: Iterable[str] = (),
        patterns: Iterable[str | SecretRule] = (),
        allow: Iterable[str] = (),
    ) -> Redactor:
        """A copy with more header names, secret patterns and allow-list entries.

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
        )

    # -- finding ------------------------------------------------------------

    def is_secret_header(self, name: str) -> bool:
        """True if a header of this name is redacted whole."""
        lower = name.lower()
        return lower in self.header_names or self._header_re.search(lower) is not None

    def _spans(self, data: bytes) -> Iterator[tuple[int, int, int]]:
        lowered = data.lower() if any(r.lowercase for r in self.rules) else data
        found: dict[bytes, list[int]] = {}
        found_lowered: dict[bytes, list[int]] = {}
        for index, (rule, scanner) in enumerate(zip(self.rules, self._compiled, strict=True)):
            named = "s" in scanner.regex.groupindex
            if rule.lowercase:
                matches = scanner.finditer(lowered, found_lowered)
            else:
                matches = scanner.finditer(data, found)
            for m in matches:
                group = "s" if named and m.start("s") >= 0 else 0
                start, end = m.span(group)
                secret = data[start:end]
                if end <= start or secret == mask(end - start):
                    continue
                if rule.generic and not _looks_random(secret):
                    continue
                if any(a.fullmatch(secret) for a in self._allowed):
                    continue
                yield start, end, index

    def scan_bytes(self, data: bytes) -> tuple[Finding, ...]:
        """Secret-shaped spans of ``data``, in order, overlaps merged."""
        spans = sorted(self._spans(data))
        merged: list[list[int]] = []
        for start, end, index in spans:
            if merged and start < merged[-1][1]:
                last = merged[-1]
                last[1] = max(last[1], end)
                last[2] = min(last[2], index)
            else:
                merged.append([start, end, index])
        return tuple(Finding(kind=self.rules[i].kind, start=s, end=e) for s, e, i in merged)

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
        if decoded is None or decoded is joined:
            red = self.redact_bytes(joined)
            return chunks if red is joined else _cut_at(red, chunks)
        red = self.redact_bytes(decoded)
        if red is decoded:
            return chunks
        return _split_like(_encode_body(red, encoding), chunks)

    def redact_request(self, request: Request) -> Request:
        """A copy of ``request`` with URL, headers and body redacted."""
        encoding = _header(request.headers, "content-encoding")
        body = self._redact_body((Chunk(at=0.0, data=request.body),), encoding)[0].data
        headers = self.redact_headers(request.headers)
        if body is not request.body and len(body) != len(request.body):
            headers = _set_length(headers, len(body))
        return attrs.evolve(request, url=self.redact_text(request.url), headers=headers, body=body)

    def redact_response(self, response: Response) -> Response:
        """A copy of ``response`` with headers and body chunks redacted."""
        encoding = _header(response.headers, "content-encoding")
        chunks = self._redact_body(response.chunks, encoding)
        headers = self.redact_headers(response.headers)
        if chunks is not response.chunks:
            size = sum(len(c.data) for c in chunks)
            if size != sum(len(c.data) for c in response.chunks):
                headers = _set_length(headers, size)
        return attrs.evolve(response, headers=headers, chunks=chunks)

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
            _scan_body(data, "request body", (Chunk(at=0.0, data=req.body),), req.headers)
            if event.response is not None:
                headers("response", event.response.headers)
                _scan_body(data, "response body", event.response.chunks, event.response.headers)
            if event.error is not None:
                text("transport error message", event.error.message)
        elif isinstance(event, SessionStarted):
            for field in attrs.fields(SessionStarted):
                if field.name != "metadata":
                    text(f"session header {field.name}", getattr(event, field.name))
            _scan_pairs(text, "metadata", event.metadata)
        elif isinstance(event, HarnessEvent):
            text("harness event name", event.name)
            _scan_pairs(text, f"harness event {event.name!r} field", event.fields)
        elif isinstance(event, RunnerFact):
            text("runner fact message", event.message)
        elif isinstance(event, SessionEnded):
            text("session end reason", event.reason)
        elif isinstance(event, WorkspaceSnapshot):
            for entry in event.files:
                text("workspace file name", entry.path)
                data(f"workspace file {entry.path}", entry.data)
        return tuple(found)


def _scan_pairs(
    text: Callable[[str, object], None], label: str, pairs: tuple[tuple[str, Scalar], ...]
) -> None:
    for key, value in pairs:
        text(f"{label} {key!r} (name)", key)
        text(f"{label} {key!r}", value)


def _scan_body(
    data: Callable[[str | Callable[[int], str], bytes], None],
    label: str,
    chunks: tuple[Chunk, ...],
    headers: Headers,
) -> None:
    joined = b"".join(c.data for c in chunks)
    if not joined:
        return
    encoding = _header(headers, "content-encoding")
    decoded = decode_body(joined, encoding)
    if decoded is not None and decoded is not joined:
        data(f"{label} (decoded {encoding.strip().lower()})", decoded)
    if len(chunks) == 1:
        data(label, joined)
        return
    ends: list[int] = []
    total = 0
    for c in chunks:
        total += len(c.data)
        ends.append(total)

    def where(offset: int) -> str:
        lo, hi = 0, len(ends)
        while lo < hi:
            mid = (lo + hi) // 2
            if ends[mid] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return f"{label} chunk {lo}"

    data(where, joined)


def _set_length(headers: Headers, size: int) -> Headers:
    return tuple(
        (name, str(size)) if name.lower() == "content-length" else (name, value)
        for name, value in headers
    )


def default_redactor() -> Redactor:
    """A redactor with the built-in header names, rules and no allow-list."""
    return Redactor()


def preview(secret: str) -> str:
    """A masked preview of a secret, safe to print: its first characters and length."""
    shown = 4 if len(secret) >= 16 else 2 if len(secret) >= 8 else 0
    return f"{secret[:shown]}{'*' * 4} ({len(secret)} chars)"
