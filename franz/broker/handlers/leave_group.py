"""LeaveGroup (13), v0-5: members leave a group (``GroupCoordinator.leave_group``).

v0-2 name one member and report its outcome as the top-level error; v3+ (KIP-345) list
members by member id and/or ``group_instance_id`` and report one error per member, the
top-level error only for the group itself.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    coordinator = ctx.services.group_coordinator
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
            "members": [],
        }
    if ctx.api_version < 3:
        error, results = await coordinator.leave_group(
            group_id=request.group_id, members=[(request.member_id, None)]
        )
        if error is ErrorCode.NONE and results:
            error = results[0][2]
        return {"throttle_time": 0, "error_code": error}
    error, results = await coordinator.leave_group(
        group_id=request.group_id,
        members=[(m.member_id, m.group_instance_id) for m in request.members],
    )
    return {
        "throttle_time": 0,
        "error_code": error,
        "members": [
            {"member_id": mid, "group_instance_id": gid, "error_code": code}
            for mid, gid, code in results
        ],
    }
