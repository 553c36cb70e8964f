"""Keeping secrets off tapes and volatile text out of matching: secret rules, the scanner, the
redactor, scrubbing.

The redactor, its rules and findings, and scrubbing are public here.
"""

from .._errors import RedactionError
from ._redactor import Located, Redactor, default_redactor
from ._rules import SecretRule, secret_values
from ._scan import Finding
from ._scrub import Redacts, Scrubber, ScrubError, ScrubRule

__all__ = [
    "Finding",
    "Located",
    "RedactionError",
    "Redactor",
    "Redacts",
    "ScrubError",
    "ScrubRule",
    "Scrubber",
    "SecretRule",
    "default_redactor",
    "secret_values",
]
