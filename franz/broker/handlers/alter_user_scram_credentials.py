"""AlterUserScramCredentials (51), v0 (KIP-554): upsert or delete users' SCRAM credentials.
The client sends the salt and the salted password (never the password); the broker stores
the salt, stored key, server key and iterations (``franz.broker.scram_admin``, Kafka's
``ZkAdminManager.alterUserScramCredentials``). In cluster mode only the active controller
alters (Kafka 3.9's ``KafkaApis``: NOT_CONTROLLER for every user elsewhere; the admin client
sends it to the controller), and only for a principal allowed ALTER on the cluster
(CLUSTER_AUTHORIZATION_FAILED for every user otherwise). Both refusals are Kafka's
``AlterUserScramCredentialsRequest.getErrorResponse``: one result per distinct user, sorted,
with the error's default message."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.scram_admin import alter_user_scram_credentials
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]


async def _alter(ctx: RequestContext, request: Any) -> dict[str, Any]:
    store = ctx.services.sasl.users
    assert store is not None
    results = await alter_user_scram_credentials(
        store, list(request.upsertions), list(request.deletions)
    )
    return {"throttle_time": 0, "results": results}


def _refused(request: Any, code: ErrorCode) -> dict[str, Any]:
    users = sorted({str(item.name) for item in [*request.upsertions, *request.deletions]})
    return {
        "throttle_time": 0,
        "results": [{"user": u, "error_code": code, "error_message": code.message} for u in users],
    }


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    services = ctx.services
    if services.zk_mode and (services.controller is None or not services.controller.is_active):
        return _refused(request, ErrorCode.NOT_CONTROLLER)
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _refused(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return _alter(ctx, request)
