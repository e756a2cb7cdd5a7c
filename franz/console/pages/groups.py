"""Consumer groups: the list (``/groups``), one group (``/groups/{id}``: state, coordinator,
members with their assignment, committed offset, log end offset and lag per partition, as
``franz consumer-groups --describe`` shows them; the table alone at ``/groups/{id}/offsets``,
which the page refreshes every 5 s), resetting its offsets
(``POST /groups/{id}/reset``) and deleting it (``POST /groups/{id}/delete``).

Both actions are POST forms with ``data-confirm``; they redirect (303) to the page with a
``.banner.ok`` (``done=reset`` with the number of partitions and Kafka's warnings for
offsets brought within the log, ``done=deleted``) or render the
group's page with the refusal in a ``.banner.error`` (Kafka's message). Data access is
``franz.console.groups_data``.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render
from franz.console.groups_data import (
    RESET_TARGETS,
    GroupActionFailed,
    delete_group,
    group_detail,
    list_groups,
    parse_reset_form,
    reset_offsets,
)

__all__ = ["NAV", "routes"]

NAV = [("Consumer groups", "/groups")]

#: Kafka's reset warnings (an offset brought within the log) carried to the page, at most.
_MAX_WARNINGS = 20


async def groups(request: Request) -> Response:
    cluster = request.app.state.cluster
    done = None
    if request.query_params.get("done") == "deleted":
        done = f"Deleted consumer group '{request.query_params.get('group', '')}'."
    return render(request, "groups/list.html", groups=await list_groups(cluster), done=done)


async def group(request: Request) -> Response:
    done = None
    warnings: list[str] = []
    if request.query_params.get("done") == "reset":
        count = request.query_params.get("partitions", "0")
        done = f"Reset the committed offsets of {count} partition(s)."
        warnings = request.query_params.getlist("warn")
    return await _group_page(request, done=done, warnings=warnings)


async def offsets(request: Request) -> Response:
    """The group's offsets table alone (the page refreshes it every 5 s: ``data-refresh``)."""
    cluster = request.app.state.cluster
    description, rows = await cluster.run(group_detail, cluster, request.path_params["id"])
    lag = [r.lag for r in rows if r.lag is not None]
    return render(
        request,
        "groups/_offsets.html",
        status_code=200 if description is not None else 404,
        rows=rows,
        total_lag=sum(lag) if lag else None,
    )


async def _group_page(
    request: Request,
    *,
    done: str | None = None,
    warnings: list[str] | None = None,
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    cluster = request.app.state.cluster
    group_id = request.path_params["id"]
    description, rows = await cluster.run(group_detail, cluster, group_id)
    if description is None and error is None:
        error, status_code = f"Consumer group '{group_id}' does not exist.", 404
    lag = [r.lag for r in rows if r.lag is not None]
    return render(
        request,
        "groups/detail.html",
        status_code=status_code,
        group_id=group_id,
        group=description,
        rows=rows,
        total_lag=sum(lag) if lag else None,
        topics=sorted({r.topic for r in rows if r.topic}),
        targets=RESET_TARGETS,
        done=done,
        warnings=warnings or [],
        error=error,
    )


async def reset(request: Request) -> Response:
    cluster = request.app.state.cluster
    group_id = request.path_params["id"]
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    try:
        wanted = parse_reset_form(form)
        plan = await cluster.run(reset_offsets, cluster, group_id, wanted)
    except (ValueError, GroupActionFailed) as exc:
        return await _group_page(request, error=str(exc), status_code=409)
    query = urlencode(
        [("done", "reset"), ("partitions", len(plan.offsets))]
        + [("warn", w) for w in plan.warnings[:_MAX_WARNINGS]]
    )
    return RedirectResponse(f"/groups/{quote(group_id, safe='')}?{query}", status_code=303)


async def delete(request: Request) -> Response:
    cluster = request.app.state.cluster
    group_id = request.path_params["id"]
    try:
        await delete_group(cluster, group_id)
    except GroupActionFailed as exc:
        return await _group_page(request, error=str(exc), status_code=409)
    return RedirectResponse(f"/groups?done=deleted&group={quote(group_id, safe='')}", 303)


def routes() -> list[BaseRoute]:
    return [
        Route("/groups", groups, name="groups"),
        Route("/groups/{id}", group, name="group"),
        Route("/groups/{id}/offsets", offsets, name="group-offsets"),
        Route("/groups/{id}/reset", reset, methods=["POST"], name="group-reset"),
        Route("/groups/{id}/delete", delete, methods=["POST"], name="group-delete"),
    ]
