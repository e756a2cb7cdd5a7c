"""The topic pages (feature-anchors 5.2 items 2, 3 and 8).

* ``GET /topics``: every topic with partitions, replication factor, under-replicated
  partitions, size and message count; ``?q=`` filters by substring (server side),
  ``?internal=1`` shows Kafka's internal topics; the create-topic form.
* ``POST /topics``: CreateTopics (name, partitions, replication factor, ``k=v`` configs).
* ``GET /topics/{name}``: partitions (leader, replicas, ISR, low and high watermark,
  messages, size), the consumer groups with offsets on it and their lag (linking to
  ``/groups/{id}``), configs (DescribeConfigs, overrides first) with a form per key, and the
  add-partitions, delete-records and delete-topic forms; a link to the message browser.
* ``POST /topics/{name}/configs`` (IncrementalAlterConfigs SET or DELETE of one key),
  ``POST /topics/{name}/partitions`` (CreatePartitions to a new total),
  ``POST /topics/{name}/delete-records`` (DeleteRecords), ``POST /topics/{name}/delete``
  (DeleteTopics).

An action that worked redirects (303) to its page with ``?done=<what was done>`` (the green
banner); one the cluster refused renders the page again with status 400 and Kafka's error
name and message in the red banner. The destructive forms carry ``data-confirm``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from franz.console import topics_data as data
from franz.console.app import render
from franz.console.cluster import ConsoleCluster
from franz.console.topics_forms import (
    PER_PAGE_CHOICES,
    FormError,
    filter_topics,
    parse_config_lines,
    parse_int,
    parse_paging,
    parse_record_deletion,
)

__all__ = ["NAV", "routes"]

NAV: Final = [("Topics", "/topics")]


def _done(path: str, text: str) -> Response:
    return RedirectResponse(f"{path}?{urlencode({'done': text})}", status_code=303)


@dataclass(frozen=True)
class _Named:
    name: str


async def topic_list(request: Request, error: str | None = None, form: Any = None) -> Response:
    query = request.query_params.get("q", "")
    internal = request.query_params.get("internal") == "1"
    paging = parse_paging(request.query_params.get("page"), request.query_params.get("per_page"))
    matched: list[_Named] = []

    def select(names: list[str]) -> list[str]:
        matched.extend(filter_topics((_Named(n) for n in names), query, internal))
        start, stop = paging.window(len(matched))
        return [n.name for n in matched[start:stop]]

    rows, total = await data.topic_list(request.app.state.cluster, select)
    start, stop = paging.window(len(matched))
    return render(
        request,
        "topics/list.html",
        status_code=400 if error else 200,
        rows=sorted(rows, key=lambda r: r.name),
        total=total,
        matched=len(matched),
        paging=paging,
        pages=paging.pages(len(matched)),
        first=start + 1,
        last=stop,
        per_page_choices=PER_PAGE_CHOICES,
        query=query,
        internal=internal,
        done=request.query_params.get("done"),
        error=error,
        form=form or {},
    )


async def create(request: Request) -> Response:
    form = await request.form()
    name = str(form.get("name", "")).strip()
    try:
        if not name:
            raise FormError("a topic needs a name")
        partitions = parse_int(str(form.get("partitions", "")), "partitions", minimum=1)
        replication = parse_int(
            str(form.get("replication_factor", "")), "replication factor", minimum=1
        )
        configs = parse_config_lines(str(form.get("configs", "")))
        text = await data.create_topic(
            request.app.state.cluster, name, partitions, replication, configs
        )
    except (FormError, data.ActionFailed) as exc:
        return await topic_list(request, error=str(exc), form=form)
    return _done(f"/topics/{quote(name)}", text)


async def detail(request: Request, error: str | None = None) -> Response:
    cluster = request.app.state.cluster
    name = request.path_params["name"]
    topic, configs = await asyncio.gather(data.topic_detail(cluster, name), _configs(cluster, name))
    if topic is None:
        return render(
            request, "topics/missing.html", status_code=404, name=name, done=_param(request)
        )
    config_error = configs if isinstance(configs, str) else None
    groups = await data.topic_groups(cluster, name, {p.id: p.high for p in topic.partitions})
    return render(
        request,
        "topics/detail.html",
        status_code=400 if error else 200,
        topic=topic,
        configs=configs if not isinstance(configs, str) else [],
        config_error=config_error,
        groups=groups,
        done=_param(request),
        error=error,
    )


async def _configs(cluster: ConsoleCluster, name: str) -> list[data.ConfigRow] | str:
    """The topic's configs, or the error DescribeConfigs answered (shown in their place)."""
    try:
        return await data.topic_configs(cluster, name)
    except data.ActionFailed as exc:
        return str(exc)


def _param(request: Request) -> str | None:
    return request.query_params.get("done")


def _action(
    do: Callable[[Request, Any, str], Awaitable[str]],
) -> Callable[[Request], Awaitable[Response]]:
    """A POST on ``/topics/{name}/...``: ``do(request, form, name)`` says what it did (OK
    banner after a redirect to the topic) or fails (the topic page with the error)."""

    async def handler(request: Request) -> Response:
        name = request.path_params["name"]
        form = await request.form()
        try:
            text = await do(request, form, name)
        except (FormError, data.ActionFailed) as exc:
            return await detail(request, error=str(exc))
        return _done(f"/topics/{quote(name)}", text)

    return handler


async def _alter_config(request: Request, form: Any, name: str) -> str:
    key = str(form.get("key", "")).strip()
    if not key:
        raise FormError("which config? (the key is empty)")
    value = None if form.get("op") == "delete" else str(form.get("value", ""))
    return await data.alter_config(request.app.state.cluster, name, key, value)


async def _add_partitions(request: Request, form: Any, name: str) -> str:
    total = parse_int(str(form.get("total", "")), "the new partition count", minimum=1)
    return await data.add_partitions(request.app.state.cluster, name, total)


async def _delete_records(request: Request, form: Any, name: str) -> str:
    cluster = request.app.state.cluster
    ids = await data.partition_ids(cluster, name)
    if not ids:
        raise data.ActionFailed("UNKNOWN_TOPIC_OR_PART", f"the cluster has no topic {name}")
    before = parse_record_deletion(str(form.get("partition", "")), str(form.get("offset", "")), ids)
    return await data.delete_records(cluster, name, before)


async def delete(request: Request) -> Response:
    name = request.path_params["name"]
    try:
        text = await data.delete_topic(request.app.state.cluster, name)
    except data.ActionFailed as exc:
        return await detail(request, error=str(exc))
    return _done("/topics", text)


def routes() -> list[BaseRoute]:
    return [
        Route("/topics", topic_list, methods=["GET"], name="topics"),
        Route("/topics", create, methods=["POST"], name="topic-create"),
        Route("/topics/{name}", detail, methods=["GET"], name="topic"),
        Route("/topics/{name}/configs", _action(_alter_config), methods=["POST"]),
        Route("/topics/{name}/partitions", _action(_add_partitions), methods=["POST"]),
        Route("/topics/{name}/delete-records", _action(_delete_records), methods=["POST"]),
        Route("/topics/{name}/delete", delete, methods=["POST"], name="topic-delete"),
    ]
