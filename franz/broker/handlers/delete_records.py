"""DeleteRecords (21), v0-2: make the records below an offset unreadable by moving each
partition's log start offset (``TopicManager.delete_records``; Kafka's
``ReplicaManager.deleteRecords``).

Per partition: ``offset`` -1 means the high watermark (``DeleteRecordsRequest.HIGH_WATERMARK``);
the answer's ``low_watermark`` is the log start offset afterwards (with a single replica, the
leader's is the partition's). An offset at or below the current start changes nothing and
still succeeds. Errors, with ``low_watermark`` -1: UNKNOWN_TOPIC_OR_PARTITION,
OFFSET_OUT_OF_RANGE (above the high watermark, or negative other than -1),
POLICY_VIOLATION (``cleanup.policy`` without ``delete``: compacted topics keep their records,
as in Kafka), KAFKA_STORAGE_ERROR (offline log dir).

The records go from readers at once (Fetch below the new start is OFFSET_OUT_OF_RANGE,
ListOffsets earliest answers the new start); their segments are deleted by the next retention
pass once wholly below it, and the new start is checkpointed with the other log start offsets
(``log-start-offset-checkpoint``). ``timeout_ms`` plays no part: nothing waits for followers.
"""

from __future__ import annotations

import logging
from typing import Any

from franz.broker.authz import filter_authorized
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode, error_code_for
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition

__all__ = ["handle"]

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    topics = ctx.services.topic_manager
    results: list[dict[str, Any]] = []
    # ACLs (KafkaApis.handleDeleteRecordsRequest): DELETE on each topic.
    deletable = filter_authorized(
        ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    for topic in request.topics:
        partitions: list[dict[str, Any]] = []
        for partition in topic.partitions:
            tp = TopicPartition(topic.name, partition.partition_index)
            if topic.name not in deletable:
                partitions.append(
                    {
                        "partition_index": tp.partition,
                        "low_watermark": -1,
                        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    }
                )
                continue
            try:
                low_watermark = topics.delete_records(tp, partition.offset)
            except Exception as exc:
                code = error_code_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("unexpected error deleting records of %s", tp)
                else:
                    log.info("records of %s not deleted: %s", tp, exc)
                partitions.append(
                    {"partition_index": tp.partition, "low_watermark": -1, "error_code": code}
                )
                continue
            partitions.append(
                {
                    "partition_index": tp.partition,
                    "low_watermark": low_watermark,
                    "error_code": ErrorCode.NONE,
                }
            )
        results.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": results}
