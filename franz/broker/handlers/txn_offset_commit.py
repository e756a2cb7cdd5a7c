"""TxnOffsetCommit (28), v0-4: a transactional producer commits a group's offsets in its
transaction (KIP-98; ``GroupCoordinator.commit_txn_offsets``).

The offsets are written to the group's ``__consumer_offsets`` partition as a transactional
batch of the request's producer id and epoch, and stay pending (OffsetFetch does not show
them; with ``require_stable`` it answers UNSTABLE_OFFSET_COMMIT) until the transaction's
marker is written there by WriteTxnMarkers, which commits or drops them.

v3+ (KIP-447) carries the consumer's ``generation_id``, ``member_id`` and
``group_instance_id``, checked as Kafka's ``validateOffsetCommit`` with ``isTransactional``
(UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID); v0-2 commit anonymously
(generation -1, member ""), which Kafka allows in any group state. Per partition:
UNKNOWN_TOPIC_OR_PARTITION (topic or partition unknown, whatever the group),
OFFSET_METADATA_TOO_LARGE, the group's status (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS) or the append's mapped error (COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR, INVALID_PRODUCER_EPOCH from the partition's producer state, ...).

ACLs (``franz.broker.authz.txn_offsets_denied``): WRITE on the transactional id, READ on the
group and on each topic. Not done (Kafka 3.9 does it): KIP-890's verification that the transaction
coordinator has the group's partition in the transaction
(``transaction.partition.verification.enable``).
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import txn_offsets_denied
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.group.group import CommitRequest
from franz.coordinator.group.offsets_topic import TopicPartitionKey

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    denied = txn_offsets_denied(ctx, request)
    offsets: dict[TopicPartitionKey, CommitRequest] = {}
    for topic in request.topics:
        for p in topic.partitions:
            if (topic.name, p.partition_index) in denied:
                continue
            offsets[(topic.name, p.partition_index)] = CommitRequest(
                offset=p.committed_offset,
                leader_epoch=getattr(p, "committed_leader_epoch", -1),
                metadata=p.committed_metadata,
            )
    results: dict[TopicPartitionKey, Any] = dict(denied)
    if offsets or not denied:
        results |= await ctx.services.group_coordinator.commit_txn_offsets(
            group_id=request.group_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            member_id=getattr(request, "member_id", ""),
            generation_id=getattr(request, "generation_id", -1),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
        )
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": results[(topic.name, p.partition_index)],
                    }
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ],
    }
