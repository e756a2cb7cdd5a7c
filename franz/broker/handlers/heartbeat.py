"""Heartbeat (12), v0-4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
rejoin (``GroupCoordinator.heartbeat``)."""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = await ctx.services.group_coordinator.heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        generation_id=request.generation_id,
        group_instance_id=getattr(request, "group_instance_id", None),
    )
    return {"throttle_time": 0, "error_code": error}
