"""The clients a Python agent asks its ``Task`` for: raw HTTP clients and ready SDK clients.

Every client is bound to the attempt's transport stack: live, the run's
network (through ``WireBridge``, so httpx2 and async clients share the
runner's retries); in replay, the tape.  Each records into the attempt's
session, and a replay miss reaches the SDK as a final 599 it does not retry
(``replay.MissResponses``).  The runner closes the sync clients when the
agent returns.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Any, Literal

from evaltape.recorder import RecordingTransport, http_module, sdk_client_options
from evaltape.replay import MissResponses

from ._wire_bridge import WireBridge

PLACEHOLDER_KEY = "evaltape-replay"
"""The API key SDK clients get in replay, where the tape needs none."""

_SDKS = {
    "openai": ("openai", "OpenAI", "AsyncOpenAI", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", "Anthropic", "AsyncAnthropic", "ANTHROPIC_API_KEY"),
}


class TaskClients:
    """Builds recording (live) or replaying clients for one attempt on demand."""

    def __init__(
        self,
        *,
        events: Any,
        inner: Any,
        redactor: Any,
        timeout: float,
        replaying: bool,
        environ: Mapping[str, str],
    ) -> None:
        real = inner if replaying else WireBridge(inner)
        self._transport = MissResponses(RecordingTransport(events, real, redactor=redactor))
        self._timeout = timeout
        self._replaying = replaying
        self._environ = environ
        self._open: list[Any] = []
        self._lock = threading.Lock()

    def http(self, *, flavor: Literal["httpx", "httpx2"] = "httpx2", async_: bool = False) -> Any:
        """An httpx or httpx2 client, sync or async, with the SDKs' defaults."""
        mod = http_module(flavor)
        options = sdk_client_options(flavor)
        options["timeout"] = mod.Timeout(self._timeout, connect=min(self._timeout, 10.0))
        cls = mod.AsyncClient if async_ else mod.Client
        client = cls(transport=self._transport, **options)
        if not async_:
            with self._lock:
                self._open.append(client)
        return client

    def key(self, provider: str) -> str:
        """The API key of ``provider``'s SDK clients (a placeholder in replay)."""
        if self._replaying:
            return PLACEHOLDER_KEY
        return self._environ.get(_SDKS[provider][3], "")

    def sdk(self, provider: str, *, base_url: str, async_: bool = False, **options: Any) -> Any:
        """A ready ``openai`` or ``anthropic`` client; ``options`` go to its constructor."""
        module_name, sync_name, async_name, _ = _SDKS[provider]
        module = importlib.import_module(module_name)
        cls = getattr(module, async_name if async_ else sync_name)
        settings: dict[str, Any] = {"base_url": base_url, "api_key": self.key(provider) or None}
        settings["http_client"] = self.http(async_=async_)
        return cls(**(settings | options))

    def close(self) -> None:
        """Close every sync client handed out (async ones hold nothing of their own)."""
        with self._lock:
            clients, self._open = self._open, []
        for client in clients:
            client.close()
