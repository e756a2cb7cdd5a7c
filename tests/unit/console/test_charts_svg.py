"""``franz.console.charts_svg``: axis bounds, rate formatting and the SVG's lines."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from franz.console.charts_data import RateSeries
from franz.console.charts_svg import byte_ceiling, format_rate, line_chart, nice_ceiling


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (0.3, 0.5), (1, 1), (1.01, 2), (2.2, 2.5), (7, 10), (430, 500), (1234, 2000)],
)
def test_nice_ceiling(value: float, ceiling: float) -> None:
    assert nice_ceiling(value) == pytest.approx(ceiling)


def test_byte_ceiling_is_round_in_binary_multiples() -> None:
    assert byte_ceiling(500) == 500
    assert byte_ceiling(70_000) == 100 * 1024
    assert byte_ceiling(3 * 1024**2 + 1) == 5 * 1024**2


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "", "—"),
        (0, "", "0/s"),
        (0.25, "", "0.25/s"),
        (512, "", "512/s"),
        (1234.5, "", "1.23k/s"),
        (2.5e6, "", "2.5M/s"),
        (100, "B", "100 B/s"),
        (1000, "B", "1000 B/s"),
        (0.5, "B", "0.5 B/s"),
        (1536, "B", "1.5 KiB/s"),
        (3 * 1024**2, "B", "3.0 MiB/s"),
    ],
)
def test_format_rate(value: float | None, unit: str, text: str) -> None:
    assert format_rate(value, unit) == text


def test_line_chart_draws_one_polyline_per_unbroken_run() -> None:
    series = RateSeries("orders", [(8.0, 10.0), (6.0, 20.0), (4.0, None), (2.0, 5.0), (0.0, 7.0)])
    svg = ET.fromstring(str(line_chart("c", [series], window_s=10.0)))
    assert svg.get("id") == "c"
    assert svg.get("data-top") == "20"
    [group] = [g for g in svg if g.get("class") == "series"]
    assert group.get("data-latest") == "7"
    assert group.get("data-label") == "orders"
    lines = group.findall("polyline")
    assert len(lines) == 2
    first = [tuple(map(float, p.split(","))) for p in lines[0].get("points", "").split()]
    # x: 8 s ago of a 10 s window is 20 % from the left of the plot; y: 20/s is the top.
    assert first[1][1] == pytest.approx(8.0)  # the plot's top edge
    assert first[0][0] < first[1][0]  # older points to the left


def test_line_chart_escapes_labels() -> None:
    svg = str(line_chart("c", [RateSeries("<t>", [(0.0, 1.0)])], window_s=10.0))
    assert "<t>" not in svg and "&lt;t&gt;" in svg
    ET.fromstring(svg)
