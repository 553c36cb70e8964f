"""evaltape.scoring: cases, scorers, statistics, results and gates.

The public surface is what a user needs: cases and their loading, the scorer
protocol and ``score_session``, run records and history, the gate decision, the
comparison, and the errors. Statistics are in ``evaltape.scoring.stats``, prices and
costs in ``evaltape.scoring.cost``, the sandbox in ``evaltape.scoring.sandbox``.  The
CLI's plumbing stays in the private modules of the sub-packages.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._public import *  # noqa: F403
    from ._public import __all__ as __all__


def __getattr__(name: str) -> Any:
    """The public names (``_public.py``), imported on first use: the CLI's
    ``evaltape --help`` needs none of them."""
    if name.startswith("_") and name != "__all__":
        raise AttributeError(f"module 'evaltape.scoring' has no attribute {name!r}")
    _public = importlib.import_module("evaltape.scoring._public")
    try:
        value = getattr(_public, name)
    except AttributeError:
        raise AttributeError(f"module 'evaltape.scoring' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    _public = importlib.import_module("evaltape.scoring._public")
    return sorted({*globals(), *_public.__all__})
