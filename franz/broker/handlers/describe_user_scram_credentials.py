"""DescribeUserScramCredentials (50), v0 (KIP-554): the SCRAM mechanisms and iteration
counts of users (never salts or keys), as Kafka 3.9's ``ZkAdminManager`` answers it on any
broker (``franz.broker.scram_admin``). A null or empty ``users`` describes every user with a
credential. A principal not allowed DESCRIBE on the cluster gets CLUSTER_AUTHORIZATION_FAILED
at the top level and for every user asked (Kafka's
``DescribeUserScramCredentialsRequest.getErrorResponse``: those results name no user)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.scram_admin import describe_user_scram_credentials
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]


async def _describe(ctx: RequestContext, users: list[str] | None) -> dict[str, Any]:
    store = ctx.services.sasl.users
    assert store is not None
    return await describe_user_scram_credentials(store, users)


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    users = None if request.users is None else [str(u.name) for u in request.users]
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {
            "throttle_time": 0,
            "error_code": code,
            "error_message": code.message,
            "results": [
                {
                    "user": "",
                    "error_code": code,
                    "error_message": code.message,
                    "credential_infos": [],
                }
                for _ in users or ()
            ],
        }
    return _describe(ctx, users)
