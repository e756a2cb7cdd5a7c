"""DeleteGroups (42), v0-2: remove Empty groups with their committed offsets
(``GroupCoordinator.delete_groups``): NON_EMPTY_GROUP while members remain,
GROUP_ID_NOT_FOUND for groups Franz does not know."""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    results = await ctx.services.group_coordinator.delete_groups(list(request.groups_names))
    return {
        "throttle_time": 0,
        "results": [
            {"group_id": group_id, "error_code": results[group_id]}
            for group_id in dict.fromkeys(request.groups_names)
        ],
    }
