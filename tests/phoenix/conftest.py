"""Arize Phoenix on 127.0.0.1, started once per test session, for the export round trip.

Phoenix is a heavy install (about 850 MB) that pins an older ``anthropic``
than the dev extra, and it takes a minute or more to start, so its tests are
marked ``phoenix`` and run only when ``EVALTAPE_PHOENIX`` names a ``phoenix``
executable (CI installs ``.[phoenix]`` into its own venv and runs them as a
step of their own), or ``EVALTAPE_PHOENIX_URL`` points at one already
running.  The server keeps its database in a temporary folder and is told to
make no outbound requests and send no telemetry.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

STARTUP_LIMIT = 600.0
"""Seconds Phoenix may take to answer /healthz before the fixture gives up (a slow CI box)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "phoenix: needs Arize Phoenix (set EVALTAPE_PHOENIX to its executable)"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phoenix:
    """A running Phoenix: its base URL and a client for its REST API."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)

    def get(self, path: str, **params: Any) -> Any:
        response = self.client.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def all(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a paged REST listing."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.get(path, limit=1000, **params, **({"cursor": cursor} if cursor else {}))
            items.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    running = os.environ.get("EVALTAPE_PHOENIX_URL", "")
    if running:  # a Phoenix the developer started (each test uses a project of its own)
        yield Phoenix(running.rstrip("/"))
        return
    exe = os.environ.get("EVALTAPE_PHOENIX", "")
    if not exe:
        pytest.skip("the Phoenix round trip runs when EVALTAPE_PHOENIX names a phoenix executable")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env |= {
        "HOME": str(work),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_ENABLE_MCP_SERVER": "false",
        "DO_NOT_TRACK": "1",
    }
    log = Path(work) / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [exe, "serve", "--no-internet"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while True:
            if process.poll() is not None:
                pytest.fail(f"phoenix exited {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        server = Phoenix(url)
        yield server
        server.client.close()
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
