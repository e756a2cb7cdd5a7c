"""The console's Starlette application: ``create_app(cluster)``.

Routes come from the page modules (``PAGES``): each module under ``franz.console.pages``
exposes ``routes() -> list[BaseRoute]`` and renders with ``templates`` (Jinja2, autoescaped,
``templates/``). Handlers reach the cluster as ``request.app.state.cluster``
(``ConsoleCluster``) and optional settings as ``request.app.state.settings``
(``ConsoleSettings``). A ``ClusterUnavailable`` anywhere renders ``error.html`` with 503.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from franz import __version__
from franz.console.cluster import ClusterUnavailable, ConsoleCluster

__all__ = ["PAGES", "ConsoleSettings", "create_app", "human_bytes", "render", "templates"]

_HERE: Final = Path(__file__).parent

#: The page modules under ``franz.console.pages``, in the navigation's order.
PAGES: Final = ["overview", "topics", "messages", "groups", "brokers", "charts", "acls", "users"]

templates: Final = Environment(
    loader=FileSystemLoader(_HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def human_bytes(size: int | float) -> str:
    """``1536`` -> ``"1.5 KiB"`` (the ``bytes`` filter)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


templates.filters["bytes"] = human_bytes
templates.filters["number"] = lambda n: f"{int(n):,}"


@dataclass
class ConsoleSettings:
    """What ``franz console`` was started with beyond the client configuration."""

    #: Prometheus endpoints to chart from (``--metrics-url``, e.g. Franz's
    #: ``metrics.listener`` or a JMX exporter in front of Kafka).
    metrics_urls: list[str] = field(default_factory=list)
    #: Shown in the page header.
    title: str = "Franz console"


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    """``template`` rendered with ``context`` plus what every page needs (``request``,
    ``cluster``, ``settings``, ``version``, ``rendered_ms`` since the request began)."""
    started = request.scope.get("franz.started", time.perf_counter())
    body = templates.get_template(template).render(
        request=request,
        cluster=request.app.state.cluster,
        settings=request.app.state.settings,
        version=__version__,
        nav=request.app.state.nav,
        rendered_ms=lambda: f"{(time.perf_counter() - started) * 1000:.0f}",
        **context,
    )
    return HTMLResponse(body, status_code=status_code)


async def _unavailable(request: Request, exc: Exception) -> Response:
    return render(request, "error.html", status_code=503, error=str(exc))


class _Timing:
    """Records when each request began (``render`` prints the time it took)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        scope["franz.started"] = time.perf_counter()
        await self.app(scope, receive, send)


def create_app(cluster: ConsoleCluster, settings: ConsoleSettings | None = None) -> Starlette:
    routes: list[BaseRoute] = []
    nav: list[tuple[str, str]] = []
    setups: list[Any] = []  # a page module's optional setup(app): e.g. a background task
    for name in PAGES:
        module = importlib.import_module(f"franz.console.pages.{name}")
        routes.extend(module.routes())
        nav.extend(getattr(module, "NAV", []))
        setups.extend([module.setup] if hasattr(module, "setup") else [])
    routes.append(Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"))
    app = Starlette(routes=routes, exception_handlers={ClusterUnavailable: _unavailable})
    app.state.cluster = cluster
    app.state.settings = settings or ConsoleSettings()
    app.state.nav = nav
    app.add_middleware(_Timing)
    for setup in setups:
        setup(app)
    return app
