"""A live attempt that starts from a turn: the recorded turns before it served, the rest sent.

``rerecord --from-turn`` re-records a session a replay found stale at turn
k > 1.  Its requests of turns 1..k-1 were identical in that replay, so the
recorded answers are exactly what the model was sampled from on the same
inputs; ``PrefixThenLive`` serves them from the recording (each request must
match its recorded one, strictly) and sends turn k and every later request
to the live transport.  The recording transport above it records both, so
the new session is whole and replays like any other.
"""

from __future__ import annotations

from typing import Any

import httpx

from evaltape.replay import ReplayTransport


class PrefixThenLive:
    """A sync httpx transport: ``replayed`` until its recorded calls are used up, then ``live``."""

    def __init__(self, replayed: ReplayTransport, live: Any) -> None:
        self.replayed = replayed
        self.live = live

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Serve the next recorded turn while one is left, else send ``request`` live."""
        if self.replayed.served < len(self.replayed.recorded):
            response: httpx.Response = self.replayed.handle_request(request)
            return response
        sent: httpx.Response = self.live.handle_request(request)
        return sent

    def close(self) -> None:
        self.replayed.close()
        self.live.close()
