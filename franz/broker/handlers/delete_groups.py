"""DeleteGroups (42), v0-2: remove Empty groups with their committed offsets
(``GroupCoordinator.delete_groups``): NON_EMPTY_GROUP while members remain,
GROUP_ID_NOT_FOUND for groups Franz does not know."""

from __future__ import annotations

from typing import Any

from franz.broker.authz import filter_authorized
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    names = list(dict.fromkeys(request.groups_names))
    allowed = filter_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    results = await ctx.services.group_coordinator.delete_groups([g for g in names if g in allowed])
    for group_id in names:
        if group_id not in allowed:
            results[group_id] = ErrorCode.GROUP_AUTHORIZATION_FAILED
    return {
        "throttle_time": 0,
        "results": [
            {"group_id": group_id, "error_code": results[group_id]}
            for group_id in dict.fromkeys(request.groups_names)
        ],
    }
