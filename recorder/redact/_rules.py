"""The built-in secret rules and the header names whose values are always redacted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs


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
    run: str = ""
    """A pattern for one unit of the secret's tail: a match (whose secret ends where
    it does) goes on through as many units as follow, so a key longer than the
    pattern's bound is masked to its end while the pattern itself stays short."""
    close: str = ""
    """An optional pattern matched after the ``run`` (e.g. a PEM block's END line)."""


_TOKEN = r"[A-Za-z0-9_-]"

DEFAULT_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        kind="private key (PEM)",
        pattern=r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----",
        # the block's lines, their breaks written as they are or escaped once or more
        # (``\n`` in a JSON string, ``\\n`` in a JSON string inside a JSON string)
        run=r"(?!-----END)(?:[A-Za-z0-9+/=\s:,.()-]|\\{1,7}[nrt/])",
        close=r"-----END[A-Z0-9 ]{0,40}-----",
    ),
    SecretRule(kind="Anthropic API key", pattern=rf"sk-ant-{_TOKEN}{{20,512}}", run=_TOKEN),
    SecretRule(kind="Langfuse key", pattern=r"pk-lf-[A-Za-z0-9-]{8,256}", run="[A-Za-z0-9-]"),
    SecretRule(kind="Langfuse key", pattern=r"sk-lf-[A-Za-z0-9-]{8,256}", run="[A-Za-z0-9-]"),
    SecretRule(
        kind="OpenAI API key",
        pattern=rf"sk-(?:proj-|svcacct-|admin-|None-)?{_TOKEN}{{20,512}}",
        run=_TOKEN,
    ),
    SecretRule(
        kind="AWS access key id",
        pattern=r"A(?:KIA|SIA|BIA|CCA)[0-9A-Z]{16}(?![0-9A-Z])",
    ),
    SecretRule(kind="GitHub token", pattern=r"gh[pousr]_[A-Za-z0-9]{30,255}", run="[A-Za-z0-9]"),
    SecretRule(kind="GitHub token", pattern=r"github_pat_[A-Za-z0-9_]{22,255}", run="[A-Za-z0-9_]"),
    SecretRule(kind="Google API key", pattern=rf"AIza{_TOKEN}{{35}}"),
    SecretRule(
        kind="Slack token", pattern=r"xox[abposre]-[A-Za-z0-9-]{10,255}", run="[A-Za-z0-9-]"
    ),
    SecretRule(
        kind="JWT",
        # header, the payload's start (then the rest of it), the signature: 2048
        # characters hold an RS8192 signature (1,366)
        pattern=rf"eyJ{_TOKEN}{{8,2048}}\.eyJ{_TOKEN}{{8}}",
        run=_TOKEN,
        close=rf"\.{_TOKEN}{{0,2048}}",
    ),
    SecretRule(
        kind="bearer token",
        pattern=r"bearer\s{1,16}(?P<s>[a-z0-9._~+/=-]{16,512})",
        lowercase=True,
        run="[a-z0-9._~+/=-]",
    ),
    SecretRule(
        kind="URL credential parameter",
        pattern=(
            r"[?&;](?:key|api[_-]?key|apikey|access[_-]?token|token|auth|secret|"
            r"client[_-]?secret|password|sig|signature|x-goog-api-key)="
            r"(?P<s>[^&#\s\"'\\<>]{8,512})"
        ),
        lowercase=True,
        run=r"[^&#\s\"'\\<>]",
    ),
    SecretRule(
        kind="secret-named JSON value",
        # A string value of a field named for a secret, at any depth: the quotes may be
        # escaped (a JSON string inside a JSON string, such as tool call arguments).
        # Counters (``max_tokens``, ``prompt_tokens``, ``token_count``) and a log
        # probability's ``token`` are not secrets.
        pattern=(
            r"(?:secret|token(?!s|iz|_?(?:count|type|limit|usage|budget))|passw(?:or)?d|"
            r"passphrase|private[_-]?key|api[_-]?key|access[_-]?key|credentials?)"
            r"[a-z0-9_.-]{0,64}\\{0,7}\"\s{0,16}:\s{0,16}\\{0,7}\""
            r"(?P<s>(?>(?:[^\"\\]|\\{1,7}[^\"\\]){1,512}))"
            r"(?!\\{0,7}\"\s{0,16},\s{0,16}\\{0,7}\"(?:logprob|bytes)\")"
        ),
        lowercase=True,
        run=r"[^\"\\]|\\{1,7}[^\"\\]",
    ),
    SecretRule(
        kind="secret-named assignment",
        pattern=(
            r"(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?token|auth[_-]?token|"
            r"client[_-]?secret|password)\s{0,16}[=:]\s{0,16}['\"]?(?P<s>[a-z0-9_./+=-]{16,512})"
        ),
        lowercase=True,
        generic=True,
        run="[a-z0-9_./+=-]",
    ),
    SecretRule(
        kind="AWS secret access key",
        pattern=(
            r"aws_?secret_?access_?key\\?[\"']?\s{0,16}[=:]\s{0,16}\\?[\"']?"
            r"(?P<s>[a-z0-9/+=]{40})(?![a-z0-9/+=])"
        ),
        lowercase=True,
    ),
    SecretRule(
        kind="URL password",
        pattern=(
            r"[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>\\]{1,256}:"
            r"(?P<s>[^\s:/@\"'<>\\]{1,256})@"
        ),
    ),
    SecretRule(
        kind="short OpenAI-style key",
        pattern=r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z_-]{0,19}[0-9])[A-Za-z0-9_-]{6,19}(?![A-Za-z0-9_-])",
    ),
)
"""The built-in secret shapes, most specific first (the first rule covering a
span names it in reports)."""

RULE_ANCHORS: dict[tuple[str, bool, bool], tuple[bytes, ...]] = {
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
            (
                b"secret",
                b"token",
                b"passw",
                b"passphrase",
                b"private",
                b"api",
                b"access",
                b"credential",
            ),
            (b"api", b"secret", b"access", b"auth", b"client", b"password"),
            (b"aws",),
            (),  # a scheme, then "://": the regex engine's prefix search
            (b"sk-",),
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


_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|SECRET_KEY|PASSWORD|PASSWD|PASS|CREDENTIALS?|"
    r"AUTH|ACCESS_KEY|PRIVATE_KEY|SESSION|COOKIE)(?:_|$)|_KEY_|SECRET|TOKEN|PASSWORD",
    re.IGNORECASE,
)

MIN_SECRET = 8
"""Shorter values are not masked by value (too likely to occur by chance)."""

PLACEHOLDERS = frozenset({"evaltape-replay", "changeme", "placeholder", "dummy", "none", "null"})
"""Values that are known not to be secrets (e.g. the key a replay hands an agent)."""


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of variables whose names look like keys, tokens, secrets or passwords."""
    return given_values(value for name, value in environ.items() if is_secret_name(name))


def is_secret_name(name: str) -> bool:
    """True if a variable of this name looks like it holds a key, token, secret or password."""
    return _SECRET_NAME.search(name) is not None


def given_values(values: Iterable[str]) -> tuple[str, ...]:
    """``values`` worth masking wherever they occur, longest first: each stripped, at least
    ``MIN_SECRET`` characters long and not a known placeholder.

    For values handed to a run as secrets whatever their names (an A/B variant's
    environment overrides) as well as for ``secret_values``."""
    found = {
        value.strip()
        for value in values
        if len(value.strip()) >= MIN_SECRET and value.strip().lower() not in PLACEHOLDERS
    }
    return tuple(sorted(found, key=lambda v: (-len(v), v)))
