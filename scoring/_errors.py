"""The scoring package's exceptions: one base class, translated at the CLI boundary."""

from __future__ import annotations


class ScoringError(Exception):
    """Base class of every expected error about cases, configuration, scores and gates."""
