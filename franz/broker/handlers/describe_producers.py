"""DescribeProducers (61): the active producers of partitions (KIP-664; Kafka's
``KafkaApis.handleDescribeProducersRequest``).

Per topic: an illegal name answers INVALID_TOPIC_EXCEPTION with the reason, a topic the
metadata cache does not know UNKNOWN_TOPIC_OR_PARTITION (with Kafka's message); then per
partition (Kafka's ``ReplicaManager.activeProducerState``): no local replica gives
NOT_LEADER_OR_FOLLOWER if the partition exists, else UNKNOWN_TOPIC_OR_PARTITION; an offline
log KAFKA_STORAGE_ERROR. Any local replica answers, leader or follower, as Kafka's
``Partition.activeProducerState`` reads its local log's producer state without a leadership
check (the admin client sends the request to the leader).

Each producer entry of the partition's ``ProducerStateManager`` (Kafka's
``UnifiedLog.activeProducers``): producer id and epoch, the last sequence of its last batch
(-1: none), the timestamp of its last batch, the coordinator epoch of its last marker (-1:
none) and the first offset of its open transaction (-1: none).
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import filter_authorized
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.topic_manager import validate_topic_name
from franz.errors import ApiError, ErrorCode
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    topics = []
    # ACLs (KafkaApis.handleDescribeProducersRequest): READ on each topic.
    readable = filter_authorized(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    for topic in request.topics:
        topic_error: tuple[ErrorCode, str | None] | None = None
        try:
            validate_topic_name(topic.name)
        except ApiError as exc:
            topic_error = (exc.code, exc.message)
        else:
            if topic.name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                topic_error = (code, code.message)
            elif not services.metadata_cache.contains(topic.name):
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topic_error = (code, code.message)
        partitions = []
        for index in topic.partition_indexes:
            if topic_error is not None:
                partitions.append(_error(index, *topic_error))
            else:
                partitions.append(_active_producers(ctx, TopicPartition(topic.name, index)))
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}


def _active_producers(ctx: RequestContext, tp: TopicPartition) -> dict[str, Any]:
    services = ctx.services
    partition = services.replica_manager.partitions.get(tp)
    if partition is None:
        known = services.metadata_cache.partition_info(tp.topic, tp.partition) is not None
        code = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return _error(tp.partition, code, None)
    log = partition.log
    if log.offline:
        return _error(tp.partition, ErrorCode.KAFKA_STORAGE_ERROR, None)
    producers = [
        {
            "producer_id": producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": entry.current_txn_first_offset,
        }
        for producer_id, entry in log.producer_state.producers.items()
    ]
    return {
        "partition_index": tp.partition,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "active_producers": producers,
    }


def _error(index: int, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "active_producers": [],
    }
