"""OffsetCommit (8), v0-9: store a group's consumed positions (``GroupCoordinator.
commit_offsets``), written to ``__consumer_offsets`` before the answer.

v0-1 (pre-0.9 clients; librdkafka's ``broker.version.fallback=0.8.2`` sends v1) are decoded by
hand (``franz.protocol.legacy_versions``). Kafka 3.9 in ZooKeeper mode writes v0 commits to
ZooKeeper; Franz has no such store and keeps them with the others (a standalone commit,
which OffsetFetch v0 reads back). v1's per-partition ``commit_timestamp`` is ignored: the
broker's retention applies.

Generation -1 with member id "" is a standalone ("simple") commit, allowed when the group has
no members. v2-4 ``retention_time_ms`` (-1: the broker's ``offsets.retention.minutes``) sets an
explicit expiry; v6+ carries the leader epoch; v7+ ``group_instance_id``. Per partition:
UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE (over ``offset.metadata.max.bytes``),
or the group's error (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
REBALANCE_IN_PROGRESS, ...) for every partition. The response is encoded by hand
(``franz.protocol.offset_commit``): commits are frequent and wide.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize, filter_authorized
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.coordinator.group.group import CommitRequest
from franz.coordinator.group.offsets_topic import TopicPartitionKey
from franz.errors import ErrorCode
from franz.protocol.messages import timedelta_ms
from franz.protocol.offset_commit import encode_offset_commit_response
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    # ACLs (KafkaApis.handleOffsetCommitRequest): READ on the group (else every partition
    # GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED).
    denied: dict[TopicPartitionKey, ErrorCode] = {}
    group_allowed = authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    readable = filter_authorized(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    offsets: dict[TopicPartitionKey, CommitRequest] = {}
    for topic in request.topics:
        for p in topic.partitions:
            if not group_allowed or topic.name not in readable:
                denied[(topic.name, p.partition_index)] = (
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    if group_allowed
                    else ErrorCode.GROUP_AUTHORIZATION_FAILED
                )
                continue
            offsets[(topic.name, p.partition_index)] = CommitRequest(
                offset=p.committed_offset,
                leader_epoch=getattr(p, "committed_leader_epoch", -1),
                metadata=p.committed_metadata,
            )
    retention = getattr(request, "retention_time", None)
    results: dict[TopicPartitionKey, Any] = dict(denied)
    if offsets or not denied:
        results |= await ctx.services.group_coordinator.commit_offsets(
            group_id=request.group_id,
            member_id=request.member_id,
            generation_id=request.generation_id_or_member_epoch,
            group_instance_id=getattr(request, "group_instance_id", None),
            retention_time_ms=-1 if retention is None else timedelta_ms(retention),
            offsets=offsets,
        )
    body = encode_offset_commit_response(
        ctx.api_version,
        [
            (
                topic.name,
                [
                    (p.partition_index, int(results[(topic.name, p.partition_index)]))
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )
    return RawBody([body])
