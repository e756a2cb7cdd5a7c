"""Live charts (``/charts``; the overview's strip): messages in/s, bytes in/s and bytes out/s
of the whole cluster and of its busiest topics, from the Prometheus endpoints of
``--metrics-url`` (``franz.console.charts_data``), drawn as inline SVG on the server
(``franz.console.charts_svg``). The page's charts are a fragment (``/charts/fragment``,
``/charts/strip``) that ``console.js`` reloads every ``REFRESH_MS``.

``setup(app)`` makes the app's ``MetricsScraper`` (``app.state.metrics``) and runs it for the
app's lifetime (wrapping the Starlette lifespan), so scraping starts with ``franz console``,
not with the first visit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render, templates
from franz.console.charts_data import METRICS, WINDOW_S, MetricsScraper
from franz.console.charts_svg import COLOURS, format_rate, line_chart

__all__ = ["CHARTS", "NAV", "REFRESH_MS", "routes", "setup"]

NAV = [("Charts", "/charts")]
REFRESH_MS: Final = 2000
#: (chart key of ``METRICS``, title, unit for ``format_rate``), in the page's order.
CHARTS: Final = (
    ("messages_in", "Messages in", ""),
    ("bytes_in", "Bytes in", "B"),
    ("bytes_out", "Bytes out", "B"),
)
assert {key for key, _, _ in CHARTS} == set(METRICS)

templates.globals["line_chart"] = line_chart
templates.globals["chart_colours"] = COLOURS
templates.globals["chart_list"] = CHARTS
templates.globals["chart_window_s"] = WINDOW_S
templates.filters["rate"] = format_rate


def setup(app: Starlette) -> None:
    scraper = MetricsScraper(app.state.settings.metrics_urls)
    app.state.metrics = scraper
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with inner(application) as state:
            scraper.start()
            try:
                yield state
            finally:
                await scraper.stop()

    app.router.lifespan_context = lifespan


def _context(request: Request) -> dict[str, Any]:
    scraper: MetricsScraper = request.app.state.metrics
    return {"scraper": scraper, "rates": scraper.rates(), "refresh_ms": REFRESH_MS}


async def charts(request: Request) -> Response:
    return render(request, "charts/page.html", **_context(request))


async def fragment(request: Request) -> Response:
    return render(request, "charts/fragment.html", **_context(request))


async def strip(request: Request) -> Response:
    return render(request, "charts/strip_body.html", **_context(request))


def routes() -> list[BaseRoute]:
    return [
        Route("/charts", charts, name="charts"),
        Route("/charts/fragment", fragment, name="charts-fragment"),
        Route("/charts/strip", strip, name="charts-strip"),
    ]
