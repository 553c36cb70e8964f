"""How a found secret may be shown: never whole."""

from __future__ import annotations


def secret_preview(secret: str) -> str:
    """A masked preview of a secret, safe to print: its first characters and length."""
    shown = 4 if len(secret) >= 16 else 2 if len(secret) >= 8 else 0
    return f"{secret[:shown]}{'*' * 4} ({len(secret)} chars)"
