"""DescribeUserScramCredentials (50), v0 (KIP-554): the SCRAM mechanisms and iteration
counts of users (never salts or keys), as Kafka 3.9's ``ZkAdminManager`` answers it on any
broker (``franz.broker.scram_admin``). A null or empty ``users`` describes every user with a
credential."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.scram_admin import describe_user_scram_credentials

__all__ = ["handle"]


async def _describe(ctx: RequestContext, users: list[str] | None) -> dict[str, Any]:
    store = ctx.services.sasl.users
    assert store is not None
    return await describe_user_scram_credentials(store, users)


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    users = None if request.users is None else [str(u.name) for u in request.users]
    return _describe(ctx, users)
