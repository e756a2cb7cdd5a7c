"""OffsetFetch (9), v1-9: a group's committed offsets (``GroupCoordinator.fetch_offsets``).

v2+ accepts ``topics`` null for every committed offset of the group; v8+ (KIP-709) batches
groups. A partition without a committed offset answers offset -1, leader epoch -1 and
metadata "" with NONE, as Kafka does; an unknown group is simply a group with no offsets.
Offsets of a TxnOffsetCommit whose transaction has no marker yet are not shown: the last
committed offset is. With ``require_stable`` (v7+, KIP-447) a partition holding such a pending
offset answers UNSTABLE_OFFSET_COMMIT with offset -1 (Kafka's ``getOffsets``; the consumer
retries until the transaction completes); with every partition asked for (``topics`` null),
only partitions with a committed offset are listed, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize, filter_authorized
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.group.offsets_topic import OffsetAndMetadata, TopicPartitionKey
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

#: OffsetFetch v2 added the response's top-level ``error_code``.
FIRST_TOP_LEVEL_ERROR = 2


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    stable = bool(getattr(request, "require_stable", False))
    if ctx.api_version >= 8:
        groups = []
        for group in request.groups:
            status = _group_status(ctx, group.group_id)
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": [] if status else _topics(ctx, group.group_id, group.topics, stable),
                    "error_code": status,
                }
            )
        return {"throttle_time": 0, "groups": groups}
    status = _group_status(ctx, request.group_id)
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
        "topics": [] if status else _topics(ctx, request.group_id, request.topics, stable),
        "error_code": status,
    }


_TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _group_status(ctx: RequestContext, group_id: str) -> ErrorCode:
    """ACLs (``KafkaApis.handleOffsetFetchRequest``): DESCRIBE on the group, then the
    coordinator's status of it."""
    if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ctx.services.group_coordinator.group_status(group_id)


def _topics(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> list[dict[str, Any]]:
    wanted: list[TopicPartitionKey] | None = None
    if topics is not None:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    coordinator = ctx.services.group_coordinator
    offsets = coordinator.fetch_offsets(group_id, wanted)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, om in offsets.items():
        if require_stable and coordinator.has_pending_txn_offset(group_id, tp):
            entry = {**_partition(tp[1], None), "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT}
        else:
            entry = _partition(tp[1], om)
        by_topic.setdefault(tp[0], []).append(entry)
    # ACLs: DESCRIBE on each topic; asked for by name, a refused topic's partitions answer
    # TOPIC_AUTHORIZATION_FAILED (Kafka's UNAUTHORIZED_PARTITION); all-topics fetches omit it.
    describable = filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic)
    for name in [n for n in by_topic if n not in describable]:
        if topics is None:
            del by_topic[name]
            continue
        by_topic[name] = [
            {
                **_partition(e["partition_index"], None),
                "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            }
            for e in by_topic[name]
        ]
    return [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


def _partition(partition: int, om: OffsetAndMetadata | None) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1 if om is None else om.offset,
        "committed_leader_epoch": -1 if om is None else om.leader_epoch,
        "metadata": "" if om is None else om.metadata,
        "error_code": ErrorCode.NONE,
    }
