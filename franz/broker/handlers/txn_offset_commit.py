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

KIP-890 part 1 (``transaction.partition.verification.enable``, default true; Kafka 3.9's
``GroupCoordinator.handleTxnCommitOffsets``): once the group's status is known, the group's
``__consumer_offsets`` partition is verified with the transaction coordinator
(``franz.broker.txn_verification``, as a Produce's partitions are) unless the producer's
transaction is already ongoing there, and the transactional batch carries the verification
guard. A partition not in the transaction is INVALID_TXN_STATE (v0-3) or
TRANSACTION_ABORTABLE (v4+, Kafka's ``genericError`` for ``apiVersion >= 4``) for every
partition of the request, and nothing is written; the coordinator's other failures as
``maybeConvertOffsetCommitError`` maps them (NETWORK_EXCEPTION is
COORDINATOR_LOAD_IN_PROGRESS, NOT_ENOUGH_REPLICAS COORDINATOR_NOT_AVAILABLE, ...).

ACLs (``franz.broker.authz.txn_offsets_denied``): WRITE on the transactional id, READ on the
group and on each topic.
"""

from __future__ import annotations

from typing import Any, Final

from franz.broker.authz import txn_offsets_denied
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.group.group import CommitRequest
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC, TopicPartitionKey
from franz.coordinator.group.txn_offsets import TransactionVerifier
from franz.errors import ErrorCode
from franz.protocol.records.batch import NO_SEQUENCE
from franz.storage.files import TopicPartition

__all__ = ["handle"]

#: The first version answered TRANSACTION_ABORTABLE (KIP-890).
TRANSACTION_ABORTABLE_VERSION: Final = 4


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
            verify=_verifier(ctx, request),
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


def _verifier(ctx: RequestContext, request: Any) -> TransactionVerifier | None:
    """KIP-890: Kafka's ``maybeStartTransactionVerificationForPartition`` for the group's
    partition (base sequence -1: the coordinator's batch has none)."""
    if not ctx.services.config.get("transaction.partition.verification.enable"):
        return None
    services = ctx.services
    transactional_id = request.transactional_id
    producer_id = int(request.producer_id)
    epoch = int(request.producer_epoch)
    abortable = ctx.api_version >= TRANSACTION_ABORTABLE_VERSION

    async def verify(partition: int) -> tuple[ErrorCode, object | None]:
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        verifier = services.txn_verifier
        started = verifier.maybe_start_transaction_verification(
            producer_id, epoch, {tp: NO_SEQUENCE}
        )
        done = await verifier.complete_transaction_verification(
            transactional_id, producer_id, epoch, started, abortable=abortable
        )
        return done.errors.get(tp, ErrorCode.NONE), done.guards.get(tp)

    return verify
