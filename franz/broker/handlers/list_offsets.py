"""ListOffsets (2): offsets by timestamp, earliest, latest and max timestamp.

Special timestamps (Kafka's ``ListOffsetsRequest``): -1 LATEST (the high watermark: the next
offset a consumer can read; Franz has no transactions, so the LSO equals it), -2 EARLIEST
(the log start offset), -3 MAX_TIMESTAMP (v7+, KIP-734: the offset of the record with the
largest timestamp), -4 EARLIEST_LOCAL (v8+, the log start offset: no tiered storage),
-5 LATEST_TIERED (v9+, -1: nothing is tiered). Any other timestamp: the first offset whose
timestamp is at or after it, among offsets below the high watermark; none gives -1/-1.
"""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode, error_code_for
from franz.storage.files import TopicPartition
from franz.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

__all__ = ["handle"]

EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    replica_manager = ctx.broker.replica_manager
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                tp = TopicPartition(topic.name, p.partition_index)
                partition = replica_manager.get_partition(tp)
                epoch = getattr(p, "current_leader_epoch", -1)
                if epoch >= 0 and epoch != partition.leader_epoch:
                    code = (
                        ErrorCode.FENCED_LEADER_EPOCH
                        if epoch < partition.leader_epoch
                        else ErrorCode.UNKNOWN_LEADER_EPOCH
                    )
                    partitions.append(_error(p.partition_index, code))
                    continue
                timestamp, offset, leader_epoch = _lookup(partition, p.timestamp)
            except Exception as exc:
                partitions.append(_error(p.partition_index, error_code_for(exc)))
                continue
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": 0,
                    "timestamp": timestamp,
                    "offset": offset,
                    "leader_epoch": leader_epoch,
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}


def _lookup(partition: Any, timestamp: int) -> tuple[int, int, int]:
    log = partition.log
    hw = partition.high_watermark
    if timestamp == LATEST_TIMESTAMP:
        return -1, hw, partition.leader_epoch
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        start = log.log_start_offset
        return -1, start, -1
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return -1, -1, -1
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found.offset >= hw:
        return -1, -1, -1
    return found.timestamp, found.offset, found.leader_epoch


def _error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
    }
