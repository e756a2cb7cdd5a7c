"""ACLs (``/acls``): every binding (DescribeAcls), grouped by resource as ``franz acls
--list`` (``kafka-acls.sh``) prints them, a form to add one (CreateAcls) and a confirmed
delete per binding (DeleteAcls with a filter matching exactly it). A broker without
``authorizer.class.name`` answers SECURITY_DISABLED: the page says so instead of failing.
Actions redirect (303) back with ``?done=`` or ``?error=`` (``franz.console.security_data``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render
from franz.console.security_data import (
    ACL_OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    ActionError,
    create_acl,
    delete_acl,
    describe_acls,
    parse_acl_form,
)

__all__ = ["NAV", "routes"]

NAV = [("ACLs", "/acls")]


def back(path: str, **query: str) -> RedirectResponse:
    """303 to ``path`` with the outcome in the query (``done`` or ``error``)."""
    return RedirectResponse(f"{path}?{urlencode(query)}", status_code=303)


async def acls(request: Request) -> Response:
    cluster = request.app.state.cluster
    error = request.query_params.get("error")
    try:
        listing = await describe_acls(cluster)
    except ActionError as exc:
        listing, error = None, str(exc)
    groups: dict[tuple[str, str, str], list[object]] = {}
    for acl in listing.acls if listing else []:
        groups.setdefault((acl.resource_type, acl.name, acl.pattern_type), []).append(acl)
    return render(
        request,
        "acls/list.html",
        listing=listing,
        groups=groups,
        done=request.query_params.get("done"),
        error=error,
        operations=ACL_OPERATIONS,
        resource_types=RESOURCE_TYPES,
        pattern_types=PATTERN_TYPES,
        permissions=PERMISSIONS,
    )


async def add(request: Request) -> Response:
    form = await request.form()
    try:
        acl = parse_acl_form(form)
        await create_acl(request.app.state.cluster, acl)
    except ActionError as exc:
        return back("/acls", error=str(exc))
    return back("/acls", done=f"Added {acl.permission} {acl.operation} for {acl.principal} "
                f"on {acl.resource_type} {acl.name} ({acl.pattern_type})")  # fmt: skip


async def delete(request: Request) -> Response:
    form = await request.form()
    try:
        acl = parse_acl_form(form)
        deleted = await delete_acl(request.app.state.cluster, acl)
    except ActionError as exc:
        return back("/acls", error=str(exc))
    return back("/acls", done=f"Deleted {deleted} ACL(s) of {acl.principal} "
                f"on {acl.resource_type} {acl.name}")  # fmt: skip


def routes() -> list[BaseRoute]:
    return [
        Route("/acls", acls, name="acls"),
        Route("/acls/add", add, methods=["POST"], name="acls-add"),
        Route("/acls/delete", delete, methods=["POST"], name="acls-delete"),
    ]
