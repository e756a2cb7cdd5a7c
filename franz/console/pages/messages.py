"""The message browser (``GET /topics/{name}/messages``) and produce
(``POST /topics/{name}/produce``).

The browser's query (``partition``: empty for all, ``from`` = ``earliest|latest|offset|
timestamp``, ``offset``, ``timestamp`` in ms or ISO-8601, ``limit`` default 100 at most 1000,
``format`` = ``auto|text|json|hex``, ``full=1`` to show big values whole) is read by
``messages_format.parse_browse_query``; the records by ``messages_data.browse`` on a worker
thread. A produce redirects (303) to the browser at the offset it got, with a
``.banner.ok`` naming the partition and offset (``done=produced``); a refused one renders
the browser with Kafka's error name and message and the form as it was filled in.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render
from franz.console.messages_data import ProduceFailed, TopicNotFound, browse, produce
from franz.console.messages_format import (
    FORMATS,
    STARTS,
    BrowseQuery,
    parse_browse_query,
    parse_produce_form,
)

__all__ = ["NAV", "routes"]

#: Reached from a topic's page, not from the navigation bar.
NAV: list[tuple[str, str]] = []


async def messages(request: Request) -> Response:
    topic = request.path_params["name"]
    try:
        query = parse_browse_query(request.query_params)
    except ValueError as exc:
        return await _page(request, topic, BrowseQuery(), error=str(exc), status_code=400)
    return await _page(request, topic, query)


async def _page(
    request: Request,
    topic: str,
    query: BrowseQuery,
    *,
    error: str | None = None,
    status_code: int = 200,
    form: dict[str, str] | None = None,
) -> Response:
    cluster = request.app.state.cluster
    result = None
    try:
        result = await cluster.run(browse, cluster, topic, query)
    except TopicNotFound:
        error, status_code = f"UNKNOWN_TOPIC_OR_PART: topic {topic!r} does not exist", 404
    except ValueError as exc:
        error, status_code = str(exc), 400
    done = None
    if request.query_params.get("done") == "produced" and query.start == "offset":
        done = (query.partition, query.offset)
    return render(
        request,
        "messages/browser.html",
        status_code=status_code,
        topic=topic,
        query=query,
        result=result,
        error=error,
        done=done,
        form=form or {},
        raw_timestamp=request.query_params.get("timestamp", ""),
        formats=FORMATS,
        starts=STARTS,
        show_all_url=str(request.url.include_query_params(full="1")),
        format_url=lambda fmt: str(request.url.include_query_params(format=fmt)),
    )


async def produce_record(request: Request) -> Response:
    topic = request.path_params["name"]
    cluster = request.app.state.cluster
    fields: dict[str, Any] = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    try:
        record = parse_produce_form(fields)
    except ValueError as exc:
        return await _page(
            request, topic, BrowseQuery(), error=str(exc), status_code=400, form=fields
        )
    try:
        partition, offset = await cluster.run(produce, cluster, topic, record)
    except ProduceFailed as exc:
        return await _page(
            request, topic, BrowseQuery(), error=str(exc), status_code=502, form=fields
        )
    except TopicNotFound:
        return await _page(request, topic, BrowseQuery())  # the browser's 404 banner
    url = URL(f"/topics/{topic}/messages").include_query_params(
        partition=partition, offset=offset, done="produced", **{"from": "offset"}
    )
    return RedirectResponse(str(url), status_code=303)


def routes() -> list[BaseRoute]:
    return [
        Route("/topics/{name}/messages", messages, name="messages"),
        Route("/topics/{name}/produce", produce_record, methods=["POST"], name="produce"),
    ]
