"""What the benchmarks' reports share: sizes, the machine line, their section of the doc.

Each benchmark owns one ``## `` section of docs/performance.md and rewrites
only that section, so the benchmarks can be run in any order.
"""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path

TOP = """\
# Performance

Measured costs of evaltape: sizes on disk, write and read times.  Every table
names the command that produced it; run it again to refresh the table on your
machine.
"""
"""The start of docs/performance.md when a benchmark creates it."""


def kb(n: float) -> str:
    """A byte count in KiB, or MiB from one MiB up."""
    return f"{n / 1024:,.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:,.2f} MiB"


def machine() -> str:
    """CPU count and model, Python version and platform; benchmarks add their libraries."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{os.cpu_count()} CPUs (nproc){f', {cpu}' if cpu else ''}; "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}"
    )


def replace_section(path: Path, heading: str, section: str) -> None:
    """Replace the section of ``path`` that starts with ``heading`` (or append it),
    leaving the rest of the file as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else TOP
    start = text.find(heading + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(heading))
        rest = "" if end < 0 else text[end + 1 :]
        text = text[:start] + section + ("\n" + rest if rest else "")
    path.write_text(text, encoding="utf-8")


def publish(path: Path, heading: str, section: str, *, write: bool) -> None:
    """Print a benchmark's section, and put it in ``path`` when ``write`` (no --no-doc)."""
    print(section)
    if write:
        replace_section(path, heading, section)
        print(f"updated {path}")
