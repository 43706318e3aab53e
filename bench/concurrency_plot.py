"""The concurrency benchmark's figure: a self-contained SVG file, drawn with a few lines of our
own (no chart library), two panels side by side over the same chat counts.

Left, seconds: time to the last answer and the per-chat p95, with the model's delay (the
floor) and the aim (1.5x the floor) as dashed guides. Right, megabytes: the fleet's peak RSS,
with the aim (600 MB) as a guide. Chat counts are spaced evenly (16, 64, 200, 1000 are
categories, not a scale), so every point has room for its label. Every text is escaped; each
point carries a `<title>` with its value, so a viewer's pointer shows the number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PANEL_W, PANEL_H = 420, 260
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 34, 40
FONT = 'font-family="sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    """One line: its name in the legend, its colour, one value per chat count."""

    name: str
    colour: str
    values: Sequence[float]


@dataclass(frozen=True)
class Guide:
    """A dashed horizontal line at `value`, labelled `name` at its right end."""

    name: str
    value: float


def concurrency_svg(
    chats: Sequence[int],
    seconds: Sequence[Series],
    time_guides: Sequence[Guide],
    rss_mb: Series,
    rss_guides: Sequence[Guide],
    caption: str,
) -> str:
    """The whole SVG document (XML, UTF-8 text) of both panels and a caption line below."""
    labels = [str(n) for n in chats]
    width, height = 2 * PANEL_W, PANEL_H + 24
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" {FONT}>',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            _panel(0, "Time to the last answer (s)", labels, seconds, time_guides),
            _panel(PANEL_W, "Fleet RSS, peak (MB)", labels, [rss_mb], rss_guides),
            _text(width / 2, height - 8, caption, "middle", 'fill="#555"'),
            "</svg>\n",
        ]
    )


def _panel(
    x0: float, title: str, labels: list[str], series: Sequence[Series], guides: Sequence[Guide]
) -> str:
    plot_w, plot_h = PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM
    peak = _nice_ceiling(max([v for s in series for v in s.values] + [g.value for g in guides]))
    step = plot_w / max(len(labels), 1)

    def x(i: int) -> float:
        return x0 + LEFT + step * (i + 0.5)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / peak)

    base = TOP + plot_h
    parts = [
        _text(x0 + LEFT, 16, title, "start", 'font-weight="bold"'),
        f'<path d="M{x0 + LEFT},{TOP} V{base} H{x0 + LEFT + plot_w}" fill="none" stroke="#333"/>',
        _text(x0 + LEFT - 4, TOP + 4, f"{peak:g}", "end", ""),
        _text(x0 + LEFT - 4, y(peak / 2) + 4, f"{peak / 2:g}", "end", ""),
        _text(x0 + LEFT - 4, base, "0", "end", ""),
        _text(x0 + LEFT + plot_w / 2, PANEL_H - 8, "chats writing at once", "middle", ""),
    ]
    for i, label in enumerate(labels):
        parts.append(_text(x(i), base + 14, label, "middle", ""))
    label_y = float(base)
    for guide in sorted(guides, key=lambda g: g.value):
        parts.append(
            f'<line x1="{x0 + LEFT}" y1="{y(guide.value):.1f}" x2="{x0 + LEFT + plot_w}" '
            f'y2="{y(guide.value):.1f}" stroke="#999" stroke-dasharray="4 3"/>'
        )
        # guides close together (3 s and 4.5 s under 200 s) get their labels stacked
        label_y = min(y(guide.value) - 3, label_y - 12)
        parts.append(_text(x0 + LEFT + plot_w, label_y, guide.name, "end", 'fill="#777"'))
    for row, line in enumerate(series):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(line.values))
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{line.colour}" stroke-width="2"/>'
        )
        for i, value in enumerate(line.values):
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(value):.1f}" r="3" fill="{line.colour}">'
                f"<title>{escape(line.name)}, {labels[i]} chats: {value:.1f}</title></circle>"
            )
        legend_y = TOP + 12 + 14 * row
        parts.append(
            f'<rect x="{x0 + LEFT + 8}" y="{legend_y - 8}" width="10" height="3" '
            f'fill="{line.colour}"/>'
        )
        parts.append(_text(x0 + LEFT + 22, legend_y - 3, line.name, "start", ""))
    return "".join(parts)


def _text(x: float, y: float, text: str, anchor: str, extra: str) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(text)}</text>'


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `value` (1 for
    nothing positive), so the axis's top and middle labels are round numbers."""
    if not value > 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value)
