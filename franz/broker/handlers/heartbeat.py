"""Heartbeat (12), v0-4: keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to
rejoin (``GroupCoordinator.heartbeat``)."""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    error = await ctx.services.group_coordinator.heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        generation_id=request.generation_id,
        group_instance_id=getattr(request, "group_instance_id", None),
    )
    return {"throttle_time": 0, "error_code": error}
