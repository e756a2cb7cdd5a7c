"""SyncGroup (14), v0-5: the leader's assignment in, each member's assignment out
(``GroupCoordinator.sync_group``). Followers wait for the leader; an empty assignment is a
valid answer (a member with no partitions). v5 checks and returns the protocol type/name.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    mandatory_missing = ctx.api_version >= 5 and (
        getattr(request, "protocol_type", None) is None
        or getattr(request, "protocol_name", None) is None
    )
    # KafkaApis.handleSyncGroupRequest: v5+ without protocol type and name is
    # INCONSISTENT_GROUP_PROTOCOL, before the READ on the group.
    denied = not mandatory_missing and not authorize(
        ctx, AclOperation.READ, ResourceType.GROUP, request.group_id
    )
    if mandatory_missing or denied:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED
            if denied
            else ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            "protocol_type": None,
            "protocol_name": None,
            "assignment": b"",
        }
    response = await ctx.services.group_coordinator.sync_group(
        group_id=request.group_id,
        member_id=request.member_id,
        generation_id=request.generation_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in request.assignments),
    )
    return {
        "throttle_time": 0,
        "error_code": response.error,
        "protocol_type": response.protocol_type,
        "protocol_name": response.protocol_name,
        "assignment": response.assignment,
    }
