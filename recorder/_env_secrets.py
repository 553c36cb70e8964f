"""Secrets a runner already knows: the values of its environment's key-like variables.

A key the agent echoes, logs or writes to a file is masked by value, whatever
its shape, wherever it lands (``Redactor.values``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
    found = {
        value.strip()
        for name, value in environ.items()
        if _SECRET_NAME.search(name)
        and len(value.strip()) >= MIN_SECRET
        and value.strip().lower() not in PLACEHOLDERS
    }
    return tuple(sorted(found, key=lambda v: (-len(v), v)))
