"""Server-side line charts as inline SVG (no JavaScript library): ``line_chart`` draws
``RateSeries`` over the last ``window_s`` seconds, newest on the right, each series one
``<polyline>`` per unbroken run of points (a failed scrape is a gap, not a zero); the y axis
goes from 0 to a round number above the highest point (``nice_ceiling``).

``format_rate`` writes a rate for people: ``1234.5`` msg/s -> ``"1.23k/s"``, bytes ->
``"1.2 MiB/s"``. Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from markupsafe import Markup, escape

from franz.console.charts_data import RateSeries

__all__ = ["COLOURS", "byte_ceiling", "format_rate", "line_chart", "nice_ceiling"]

#: Series colours, in order (the legend uses the same).
COLOURS: Final = ("#2457c5", "#d9822b", "#1e7b34", "#b3261e", "#7b3fb5", "#0f8b8d")
WIDTH: Final = 560
HEIGHT: Final = 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 8, 8, 20


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above ``value`` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value * (1 - 1e-12):
            return candidate
    return 10.0 ** (exponent + 1)  # pragma: no cover - 10.0 above always qualifies


def byte_ceiling(value: float) -> float:
    """``nice_ceiling`` in the binary multiple of ``value`` (``100_000`` -> 100 KiB), so a
    bytes axis reads ``100 KiB/s`` rather than ``97.7 KiB/s``."""
    scale = 1.0
    while value >= 1024 * scale and scale < 1024**3:
        scale *= 1024
    return nice_ceiling(value / scale) * scale


def format_rate(value: float | None, unit: str = "") -> str:
    """A per-second rate: ``unit == "B"`` in binary multiples (``"1.5 KiB/s"``), otherwise
    with k/M/G (``"12.3k/s"``); ``"—"`` for no value."""
    if value is None:
        return "—"
    if unit == "B":
        size = value
        for prefix in ("B", "KiB", "MiB", "GiB"):
            if abs(size) < 1024 or prefix == "GiB":
                if prefix != "B":
                    return f"{size:.1f} {prefix}/s"
                return f"{size:.0f} B/s" if size >= 10 or size == int(size) else f"{size:.1f} B/s"
            size /= 1024
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= divisor:
            return f"{value / divisor:.3g}{suffix}/s"
    return f"{value:.3g}/s" if value >= 1 or value == 0 else f"{value:.2f}/s"


def _runs(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    runs: list[list[tuple[float, float]]] = [[]]
    for ago, rate in points:
        if rate is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((ago, rate))
    return [run for run in runs if run]


def line_chart(
    chart_id: str, series: Sequence[RateSeries], window_s: float, unit: str = ""
) -> Markup:
    """An ``<svg id=chart_id>`` with one line per series (``data-latest`` on each
    ``<g class="series">``: its latest rate, for tests and tooltips)."""
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    peak = max((r for s in series for _, r in s.points if r is not None), default=0.0)
    top = byte_ceiling(peak) if unit == "B" else nice_ceiling(peak)

    def x(ago: float) -> float:
        return _LEFT + plot_w * (1 - min(max(ago, 0.0), window_s) / window_s)

    def y(rate: float) -> float:
        return _TOP + plot_h * (1 - rate / top)

    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" data-top="{top:g}">'
    ]
    for fraction in (0.0, 0.5, 1.0):
        gy = y(top * fraction)
        parts.append(
            f'<line class="grid" x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"/>'
            f'<text class="axis" x="{_LEFT - 4}" y="{gy + 4:.1f}" text-anchor="end">'
            f"{escape(format_rate(top * fraction, unit))}</text>"
        )
    for ago, label in ((window_s, f"-{window_s / 60:g} min"), (window_s / 2, ""), (0.0, "now")):
        if label:
            anchor = "start" if ago else "end"
            parts.append(
                f'<text class="axis" x="{x(ago):.1f}" y="{HEIGHT - 4}" text-anchor="{anchor}">'
                f"{label}</text>"
            )
    for index, s in enumerate(series):
        colour = COLOURS[index % len(COLOURS)]
        latest = "" if s.latest is None else f"{s.latest:.6g}"
        parts.append(
            f'<g class="series" data-label="{escape(s.label)}" data-latest="{latest}" '
            f'stroke="{colour}"><title>{escape(s.label)}: '
            f"{escape(format_rate(s.latest, unit))}</title>"
        )
        for run in _runs(s.points):
            if len(run) == 1:
                (ago, rate) = run[0]
                parts.append(
                    f'<circle cx="{x(ago):.1f}" cy="{y(rate):.1f}" r="2" fill="{colour}"/>'
                )
            else:
                coords = " ".join(f"{x(ago):.1f},{y(rate):.1f}" for ago, rate in run)
                parts.append(f'<polyline fill="none" stroke-width="1.6" points="{coords}"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))
