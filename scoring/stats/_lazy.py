"""scipy and numpy, imported on first use: most commands never compute a statistic."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def scipy_special() -> Any:
    """``scipy.special``, imported on first use: scipy costs ~1 s to import, and most
    ``evaltape`` commands never compute a statistic."""
    from scipy import special  # type: ignore[import-untyped]

    return special


def scipy_stats() -> Any:
    """``scipy.stats``, imported on first use."""
    from scipy import stats

    return stats


def numpy_module() -> ModuleType:
    """``numpy``, imported on first use."""
    import numpy

    return numpy
