"""evaltape: record AI-agent sessions as tapes, replay them in CI, rescore them, gate releases.

This folder is installed as the ``evaltape`` package itself; ``recorder/``, ``replay/`` and
``scoring/`` are installed beneath it as ``evaltape.recorder``, ``evaltape.replay`` and
``evaltape.scoring``. It re-exports the handful of names most programs start from.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "ReplayTransport": "evaltape.replay",
    "replay_client": "evaltape.replay",
    **dict.fromkeys(
        ("Session", "TapeReader", "fold", "open_session", "read_sessions", "recording_client"),
        "evaltape.recorder",
    ),
}
"""Where each re-exported name lives; imported on first use, so the CLI's
``evaltape --help`` loads neither package."""


def __getattr__(name: str) -> Any:
    import importlib

    if name == "__version__":
        name, where = "VERSION", "evaltape.recorder._version"
        value = getattr(importlib.import_module(where), name)
        globals()["__version__"] = value
        return value
    if name not in _WHERE:
        raise AttributeError(f"module 'evaltape' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


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
