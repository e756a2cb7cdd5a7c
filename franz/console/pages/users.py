"""SCRAM users (``/users``): each user with its mechanisms and iterations
(DescribeUserScramCredentials), a form to add a user or change a password
(AlterUserScramCredentials upsertion, SCRAM-SHA-256 or SCRAM-SHA-512) and a confirmed delete
of a user (a deletion of each of its mechanisms). The password is read from the POST body
only: never put in a redirect, a banner or a log line (``franz.console.security_data``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from franz.console.app import render
from franz.console.pages.acls import back
from franz.console.security_data import (
    MECHANISMS,
    MIN_ITERATIONS,
    ActionError,
    delete_user,
    describe_users,
    parse_user_form,
    upsert_user,
)

__all__ = ["NAV", "routes"]

NAV = [("Users", "/users")]


async def users(request: Request) -> Response:
    error = request.query_params.get("error")
    try:
        found = await describe_users(request.app.state.cluster)
    except ActionError as exc:
        found, error = [], str(exc)
    return render(
        request,
        "users/list.html",
        users=found,
        mechanisms=list(MECHANISMS),
        min_iterations=MIN_ITERATIONS,
        done=request.query_params.get("done"),
        error=error,
    )


async def upsert(request: Request) -> Response:
    form = await request.form()
    try:
        user, mechanism, iterations, password = parse_user_form(form)
        await upsert_user(request.app.state.cluster, user, mechanism, iterations, password)
    except ActionError as exc:
        return back("/users", error=str(exc))
    return back("/users", done=f"Set the {mechanism} credential of {user}")


async def delete(request: Request) -> Response:
    form = await request.form()
    user = str(form.get("user") or "").strip()
    cluster = request.app.state.cluster
    try:
        found = {u.name: u for u in await describe_users(cluster)}
        if user not in found:
            raise ActionError("RESOURCE_NOT_FOUND", f"no SCRAM user {user!r}")
        await delete_user(cluster, user, [m for m, _ in found[user].credentials])
    except ActionError as exc:
        return back("/users", error=str(exc))
    return back("/users", done=f"Deleted user {user}")


def routes() -> list[BaseRoute]:
    return [
        Route("/users", users, name="users"),
        Route("/users/upsert", upsert, methods=["POST"], name="users-upsert"),
        Route("/users/delete", delete, methods=["POST"], name="users-delete"),
    ]
