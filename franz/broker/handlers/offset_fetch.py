"""OffsetFetch (9), v1-9: a group's committed offsets (``GroupCoordinator.fetch_offsets``).

v2+ accepts ``topics`` null for every committed offset of the group; v8+ (KIP-709) batches
groups. A partition without a committed offset answers offset -1, leader epoch -1 and
metadata "" with NONE, as Kafka does; an unknown group is simply a group with no offsets.
``require_stable`` (v7+) is satisfied trivially: Franz has no transactional offset commits,
so no offset is ever pending.
"""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.group.offsets_topic import OffsetAndMetadata, TopicPartitionKey
from franz.errors import ErrorCode

__all__ = ["handle"]

#: OffsetFetch v2 added the response's top-level ``error_code``.
FIRST_TOP_LEVEL_ERROR = 2


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    coordinator = ctx.services.group_coordinator
    if ctx.api_version >= 8:
        groups = []
        for group in request.groups:
            status = coordinator.group_status(group.group_id)
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": [] if status else _topics(ctx, group.group_id, group.topics),
                    "error_code": status,
                }
            )
        return {"throttle_time": 0, "groups": groups}
    status = coordinator.group_status(request.group_id)
    if status and ctx.api_version < FIRST_TOP_LEVEL_ERROR:
        # v0-1 have no top-level error: each requested partition carries it.
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {**_partition(p, None), "error_code": status} for p in t.partition_indexes
                ],
            }
            for t in request.topics or ()
        ]
        return {"throttle_time": 0, "topics": topics, "error_code": status}
    return {
        "throttle_time": 0,
        "topics": [] if status else _topics(ctx, request.group_id, request.topics),
        "error_code": status,
    }


def _topics(ctx: RequestContext, group_id: str, topics: Any) -> list[dict[str, Any]]:
    wanted: list[TopicPartitionKey] | None = None
    if topics is not None:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    offsets = ctx.services.group_coordinator.fetch_offsets(group_id, wanted)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), om in offsets.items():
        by_topic.setdefault(topic, []).append(_partition(partition, om))
    return [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


def _partition(partition: int, om: OffsetAndMetadata | None) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1 if om is None else om.offset,
        "committed_leader_epoch": -1 if om is None else om.leader_epoch,
        "metadata": "" if om is None else om.metadata,
        "error_code": ErrorCode.NONE,
    }
