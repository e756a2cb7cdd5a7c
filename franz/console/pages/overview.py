"""The cluster overview (``/``): cluster id, controller, brokers with host, port, rack, the
Kafka release their ApiVersions look like, and disk use per log dir (DescribeLogDirs)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render

__all__ = ["NAV", "routes"]

NAV = [("Overview", "/")]


async def overview(request: Request) -> Response:
    cluster = request.app.state.cluster
    return render(request, "overview.html", overview=await cluster.overview())


def routes() -> list[BaseRoute]:
    return [Route("/", overview, name="overview")]
