"""DescribeGroups (15), v0-5: state, protocol and members of groups
(``GroupCoordinator.describe_group``). A group Franz does not know is reported as Kafka 3.x
does: NONE with state ``Dead``. Members' metadata and assignments are filled only for Stable
groups. ``authorized_operations`` (v3+) is Kafka's "not requested" value unless asked for,
else the GROUP operations the principal may do (all of them with no authorizer). A group the
principal may not DESCRIBE gets GROUP_AUTHORIZATION_FAILED (Kafka's
``DescribeGroupsResponse.groupError``: empty state, protocol and members).
"""

from __future__ import annotations

from typing import Any

from franz.broker.authorized_operations import OPERATIONS_OMITTED
from franz.broker.authz import authorize, authorized_operations
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]



def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    coordinator = ctx.services.group_coordinator
    include = getattr(request, "include_authorized_operations", False)
    groups = []
    for group_id in request.groups:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_denied(group_id))
            continue
        d = coordinator.describe_group(group_id)
        groups.append(
            {
                "error_code": d.error,
                "group_id": d.group_id,
                "group_state": d.state,
                "protocol_type": d.protocol_type,
                "protocol_data": d.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in d.members
                ],
                "authorized_operations": authorized_operations(
                    ctx, ResourceType.GROUP, group_id, include
                ),
            }
        )
    return {"throttle_time": 0, "groups": groups}


def _denied(group_id: str) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": OPERATIONS_OMITTED,
    }
