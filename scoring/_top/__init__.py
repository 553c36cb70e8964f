"""evaltape: record AI-agent sessions as tapes, replay them in CI, rescore them, gate releases.

This folder is installed as the ``evaltape`` package itself; ``recorder/``, ``replay/`` and
``scoring/`` are installed beneath it as ``evaltape.recorder``, ``evaltape.replay`` and
``evaltape.scoring``. It re-exports the handful of names most programs start from.
"""

from evaltape.recorder import VERSION as __version__
from evaltape.recorder import (
    Session,
    TapeReader,
    fold,
    open_session,
    read_sessions,
    recording_client,
)
from evaltape.replay import ReplayTransport, replay_client

__all__ = [
    "ReplayTransport",
    "Session",
    "TapeReader",
    "__version__",
    "fold",
    "open_session",
    "read_sessions",
    "recording_client",
    "replay_client",
]
