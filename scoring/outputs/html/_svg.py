"""The report's two plots as inline SVG, written by hand.

A pass-rate plot is a dot per row and a line for its interval on a 0-100 %
axis; the movement plot is an arrow per case from its baseline rate to its
current one.  Both are a few dozen elements: a plotting library (and its
JavaScript runtime inlined into every report) would outweigh the page, and
plain SVG needs no script, renders the same in every browser, and escapes
like the rest of the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

ROW = 22
"""Pixels per row."""
LABEL = 300
"""Pixels of the label column."""
PLOT = 420
"""Pixels of the 0-100 % axis."""
PAD = 12


def _x(rate: float) -> float:
    return LABEL + PAD + max(0.0, min(1.0, rate)) * PLOT


def _axis(height: float) -> list[str]:
    out = []
    for tick in range(0, 101, 25):
        x = _x(tick / 100)
        out.append(
            f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{height - 18}" class="grid"/>'
            f'<text x="{x:.1f}" y="{height - 4}" class="tick">{tick}%</text>'
        )
    return out


def _svg(height: float, title: str, body: list[str]) -> str:
    width = LABEL + PLOT + 2 * PAD + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" '
        f'viewBox="0 0 {width} {height:.0f}" width="{width}" height="{height:.0f}">'
        f"<title>{escape(title)}</title>{''.join(body)}</svg>"
    )


def rate_plot(rows: Sequence[tuple[str, float, float, float, bool]]) -> str:
    """``(label, rate, low, high, alt)`` per row: a dot at the rate, a bar over the interval.

    ``alt`` colours the row as the comparison's baseline side.
    """
    height = PAD + ROW * len(rows) + 24
    body = _axis(height)
    for i, (label, rate, low, high, alt) in enumerate(rows):
        y = PAD + ROW * i + ROW / 2
        cls = "base" if alt else "cur"
        body.append(f'<text x="{LABEL}" y="{y + 4:.1f}" class="label">{escape(label)}</text>')
        body.append(
            f'<line x1="{_x(low):.1f}" y1="{y:.1f}" x2="{_x(high):.1f}" y2="{y:.1f}" '
            f'class="ci {cls}"/>'
        )
        if not math.isnan(rate):
            body.append(
                f'<circle cx="{_x(rate):.1f}" cy="{y:.1f}" r="5" class="dot {cls}">'
                f"<title>{escape(label)}: {rate * 100:.0f}% "
                f"(95% {low * 100:.0f}%-{high * 100:.0f}%)</title></circle>"
            )
    return _svg(height, "pass rates with 95% intervals", body)


def move_plot(rows: Sequence[tuple[str, float, float]]) -> str:
    """``(label, baseline rate, current rate)`` per case: an arrow from before to now."""
    height = PAD + ROW * len(rows) + 24
    body = [
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
        "</marker></defs>",
        *_axis(height),
    ]
    for i, (label, before, now) in enumerate(rows):
        y = PAD + ROW * i + ROW / 2
        cls = "down" if now < before else "up"
        body.append(f'<text x="{LABEL}" y="{y + 4:.1f}" class="label">{escape(label)}</text>')
        body.append(f'<circle cx="{_x(before):.1f}" cy="{y:.1f}" r="3" class="dot base"/>')
        body.append(
            f'<line x1="{_x(before):.1f}" y1="{y:.1f}" x2="{_x(now):.1f}" y2="{y:.1f}" '
            f'class="move {cls}" marker-end="url(#arrow)">'
            f"<title>{escape(label)}: {before * 100:.0f}% → {now * 100:.0f}%</title></line>"
        )
    return _svg(height, "per-case movement, baseline to current", body)
