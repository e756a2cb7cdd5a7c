"""OffsetDelete (47), v0: delete a group's committed offsets for some partitions (KIP-496;
``GroupCoordinator.delete_offsets``). Allowed for Empty groups, and for topics a Stable
consumer group does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise)."""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize, filter_authorized
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if not authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return {
            "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
            "throttle_time": 0,
            "topics": [],
        }
    readable = filter_authorized(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    wanted = [
        (t.name, p.partition_index)
        for t in request.topics
        if t.name in readable
        for p in t.partitions
    ]
    error, results = await ctx.services.group_coordinator.delete_offsets(request.group_id, wanted)
    for t in request.topics:
        if t.name not in readable:
            for p in t.partitions:
                results[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    topics = []
    if error is ErrorCode.NONE:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": results[(t.name, p.partition_index)],
                    }
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
    return {"error_code": error, "throttle_time": 0, "topics": topics}
