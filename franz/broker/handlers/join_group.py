"""JoinGroup (11), v2-9: join a classic group (``GroupCoordinator.join_group``).

v4+ uses the KIP-394 two-step join (MEMBER_ID_REQUIRED first), v5+ carries
``group_instance_id`` (KIP-345 static membership), v9 ``skip_assignment`` (a static leader
rejoining without a rebalance). ``protocol_name`` is nullable from v7; older versions get "".
The member's host is reported as Kafka's ``InetAddress.toString`` prints it: ``/127.0.0.1``.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.protocol.messages import timedelta_ms
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        # KafkaApis.handleJoinGroupRequest: JoinGroupResult(memberId, GROUP_AUTHORIZATION_FAILED).
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
            "generation_id": -1,
            "protocol_type": None,
            "protocol_name": None if ctx.api_version >= 7 else "",
            "leader": "",
            "skip_assignment": False,
            "member_id": request.member_id,
            "members": [],
        }
    session_timeout = timedelta_ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    response = await ctx.services.group_coordinator.join_group(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        client_id=ctx.client_id,
        client_host=f"/{ctx.client_host}",
        session_timeout_ms=session_timeout,
        rebalance_timeout_ms=session_timeout if rebalance is None else timedelta_ms(rebalance),
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
        require_known_member_id=ctx.api_version >= 4,
        supports_skip_assignment=ctx.api_version >= 9,
    )
    nullable = ctx.api_version >= 7
    return {
        "throttle_time": 0,
        "error_code": response.error,
        "generation_id": response.generation_id,
        "protocol_type": response.protocol_type,
        "protocol_name": response.protocol_name
        if response.protocol_name is not None or nullable
        else "",
        "leader": response.leader_id,
        "skip_assignment": getattr(response, "skip_assignment", False),
        "member_id": response.member_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata,
            }
            for m in response.members
        ],
    }
