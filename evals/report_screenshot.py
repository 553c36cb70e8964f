"""Open an evaltape HTML report in headless Chromium; regenerate docs/report.png.

    python evals/report_screenshot.py            # replay the shipped cassettes, report, shoot
    python evals/report_screenshot.py PAGE.html OUT.png

Without arguments it replays the shipped cassettes (``evaltape replay``, offline),
writes the report of that run to a temporary file and saves a screenshot of
its first screen as ``docs/report.png``.  The browser is the system's
``chromium`` (Debian package ``chromium``), driven through Playwright; it
gets no network, no extensions, no first-run work.  ``tests/test_html_report.py``
uses the same ``open_page``.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
"""Where Debian's ``chromium`` package puts the browser."""

ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Flags that keep the browser from doing anything but showing the page."""

REPO = Path(__file__).resolve().parent.parent


def chromium() -> str | None:
    """The browser's path, or None when it is not installed."""
    return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


@contextlib.contextmanager
def open_page(page: Path, width: int = 1200, height: int = 1300) -> Iterator[tuple[Any, list[str]]]:
    """The loaded page and the list its console errors and page errors are appended to."""
    from playwright.sync_api import sync_playwright

    browser_path = chromium()
    if browser_path is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=list(ARGS))
        try:
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.on(
                "console",
                lambda m: (
                    errors.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning")
                    else None
                ),
            )
            tab.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
            tab.on(
                "request",
                lambda r: (
                    None
                    if r.url.startswith(("file:", "data:"))
                    else errors.append(f"network: {r.url}")
                ),
            )
            tab.goto(page.resolve().as_uri())
            yield tab, errors
        finally:
            browser.close()


def regenerate(out: Path) -> None:
    """Replay the shipped cassettes, write their report and save its first screen."""
    evaltape = str(Path(sys.executable).with_name("evaltape"))
    subprocess.run([evaltape, "replay"], cwd=REPO, check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        subprocess.run([evaltape, "report", "latest", "-o", str(page)], cwd=REPO, check=True)
        shoot(page, out)


def shoot(page: Path, out: Path) -> None:
    """Save the first screen of ``page`` as ``out`` (PNG)."""
    with open_page(page) as (tab, errors):
        tab.screenshot(path=str(out))
    if errors:
        raise SystemExit("the page reported errors:\n" + "\n".join(errors))
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        shoot(Path(sys.argv[1]), Path(sys.argv[2]))
    else:
        regenerate(REPO / "docs" / "report.png")
