"""Checks of a live run's request values that the settings table cannot make.

Run before anything else, so a seed no provider takes or an empty model name
is one clear line (``RunRefused``), not an error in every attempt.
"""

from __future__ import annotations

from collections.abc import Sequence

SEED_MAX = 2**63 - 1
"""The largest seed: providers take a signed 64-bit integer (attempt ``n`` adds ``n``)."""


def seed_problem(seed: int | None, attempts: int = 1) -> str | None:
    """Why ``seed`` (plus up to ``attempts - 1``) is out of range, or None."""
    if seed is None:
        return None
    top = SEED_MAX - max(0, attempts - 1)
    if not 0 <= seed <= top:
        return f"--seed must be a whole number from 0 to {top}, got {seed}"
    return None


def models_problem(models: Sequence[str]) -> str | None:
    """Why the models under test cannot be called, or None."""
    if not models:
        return "no model under test"
    for model in models:
        if not model.strip():
            return "-m/--model must not be empty"
        if model != model.strip() or any(c.isspace() or not c.isprintable() for c in model):
            return f"-m/--model {model!r}: a model name has no spaces or control characters"
    return None
