"""The running evaltape version, as written into tape headers."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("evaltape")
except PackageNotFoundError:  # running from a source tree
    VERSION = "0+unknown"

WRITER = f"evaltape {VERSION}"
"""Name written into the header of every tape file this version creates."""
