"""Bar charts as inline SVG, drawn on the server: no chart library, no script, no CDN.

`bar_chart` returns markup that is safe to insert into a page as is (every text is escaped
here). Each bar carries a `<title>` ("label: value"), so a pointer shows the number and a
test can read the values back; the axes are labelled with the largest value, zero and a few
bucket labels. The chart scales with its container (`viewBox`, width 100%), so it never
makes a narrow screen scroll sideways.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 200
LEFT, BOTTOM, TOP = 56, 28, 10
"""Room for the value axis's labels (left), the bucket labels (bottom) and the top one."""
X_LABELS = 4
"""How many bucket labels the horizontal axis shows at most (first, last and between)."""


@dataclass(frozen=True)
class Bar:
    """One bucket: its label ("2026-12-03", "14:00"), its value, and the value as shown."""

    label: str
    value: float
    shown: str


def bar_chart(chart_id: str, title: str, bars: Sequence[Bar], unit: str = "") -> str:
    """An `<svg id=chart_id>` with one `<rect class="chart-bar">` per bar (even at value 0, height
    0, so the bar count is the bucket count), each titled "label: shown", the value axis from
    0 to the largest value and at most `X_LABELS` bucket labels. Never raises on an empty or
    all-zero series (the axis then goes to 1)."""
    peak = max((b.value for b in bars), default=0.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    step = plot_w / max(len(bars), 1)
    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" role="img" aria-label="{escape(title)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="xMinYMin meet">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" '
        f'y2="{TOP + plot_h}"/>',
        _text(LEFT - 4, TOP + 10, _number(peak) + unit, "end", "y-max"),
        _text(LEFT - 4, TOP + plot_h, "0", "end", "y-min"),
    ]
    for i, bar in enumerate(bars):
        h = plot_h * max(bar.value, 0.0) / peak
        x = LEFT + i * step + step * 0.1
        parts.append(
            f'<rect class="chart-bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" '
            f'width="{step * 0.8:.1f}" height="{h:.1f}">'
            f"<title>{escape(bar.label)}: {escape(bar.shown)}</title></rect>"
        )
    last = len(bars) - 1
    for i in _label_positions(len(bars)):
        # the end labels align with the plot's edges, so none is cut off by the frame
        anchor, x = ("start", LEFT + i * step) if i == 0 and last else (
            ("end", LEFT + (i + 1) * step) if i == last and last else
            ("middle", LEFT + i * step + step / 2))  # fmt: skip
        parts.append(_text(x, HEIGHT - 8, bars[i].label, anchor, "x-label"))
    parts.append("</svg>")
    return "".join(parts)


def _label_positions(count: int) -> list[int]:
    if count <= X_LABELS:
        return list(range(count))
    last = count - 1
    return sorted({round(last * k / (X_LABELS - 1)) for k in range(X_LABELS)})


def _text(x: float, y: float, text: str, anchor: str, css: str) -> str:
    return (
        f'<text class="{css}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'
    )


def _number(value: float) -> str:
    """A short axis number: 1234 -> "1.2k", 0.0312 -> "0.031"."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    if value == int(value):
        return str(int(value))
    return f"{value:.3g}"
