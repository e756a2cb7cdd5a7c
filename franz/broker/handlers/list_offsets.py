"""ListOffsets (2): offsets by timestamp, earliest, latest and max timestamp.

Special timestamps (Kafka's ``ListOffsetsRequest``): -1 LATEST (the last fetchable offset:
the next offset a consumer can read), -2 EARLIEST (the log start offset), -3 MAX_TIMESTAMP
(v7+, KIP-734: the offset of the record with the largest timestamp), -4 EARLIEST_LOCAL (v8+,
the log start offset: no tiered storage), -5 LATEST_TIERED (v9+, -1: nothing is tiered). Any
other timestamp (and MAX_TIMESTAMP): the first offset whose timestamp is at or after it; one
at or beyond the last fetchable offset gives -1/-1.

The last fetchable offset is Kafka's ``Partition.fetchOffsetForTimestamp``'s: for a consumer
at READ_UNCOMMITTED (``isolation_level`` 0, and every v1 request) the high watermark; at
READ_COMMITTED (1, v2+, KIP-98) the last stable offset (``Partition.last_stable_offset``: an
open transaction's first offset holds it back); for a replica (replica id >= 0: no isolation
level) the log end offset.

Only the leader answers (``franz.broker.leader_routing``): a follower or a broker that does
not host the partition gives NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION when the
partition is not in the metadata cache), except to the debugging consumer (replica id -2),
as Kafka's ``fetchOnlyFromLeader``. ``current_leader_epoch`` (v4+) is fenced first.

v0 (librdkafka's ``broker.version.fallback`` < 0.10.1 and other pre-0.10.1 clients) answers
the old way, with a list of offsets (Kafka's ``legacyFetchOffsetsBefore``): -1 gives the
high watermark (then older segment base offsets, up to ``max_num_offsets``), -2 the log start
offset, and a timestamp the base offsets of the segments last modified at or before it.
"""

from __future__ import annotations

import os
from typing import Any

from franz.broker.authz import filter_authorized
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.broker.leader_routing import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_CONSUMER_ID,
    local_partition,
)
from franz.errors import ErrorCode, error_code_for
from franz.protocol.legacy_versions import (
    LegacyListOffsetsRequest,
    encode_list_offsets_v0_response,
)
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition
from franz.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

__all__ = ["handle"]

EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if ctx.api_version == 0:
        return _handle_v0(ctx, request)
    require_leader = request.replica_id != DEBUGGING_CONSUMER_ID
    topics = []
    authorized = _authorized(ctx, request)
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if topic.name not in authorized:
                partitions.append(_error(p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            try:
                tp = TopicPartition(topic.name, p.partition_index)
                partition = local_partition(
                    ctx.services,
                    tp,
                    current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                    require_leader=require_leader,
                )
                if isinstance(partition, ErrorCode):
                    partitions.append(_error(p.partition_index, partition))
                    continue
                timestamp, offset, leader_epoch = _lookup(
                    partition,
                    p.timestamp,
                    from_replica=request.replica_id >= 0,
                    read_committed=getattr(request, "isolation_level", 0) == 1,
                )
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


def _lookup(
    partition: Any, timestamp: int, *, from_replica: bool, read_committed: bool
) -> tuple[int, int, int]:
    """A consumer reads up to the HW (READ_UNCOMMITTED) or the LSO (READ_COMMITTED); a
    follower (replica id >= 0: Kafka's fetcher asking for the leader's end after
    OFFSET_OUT_OF_RANGE) up to the LEO, as Kafka's ``Partition.fetchOffsetForTimestamp``
    with no isolation level."""
    log = partition.log
    if from_replica:
        hw = log.log_end_offset
    elif read_committed:
        hw = partition.last_stable_offset
    else:
        hw = partition.high_watermark
    if timestamp == LATEST_TIMESTAMP:
        return -1, hw, partition.leader_epoch
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        # Kafka's UnifiedLog.fetchOffsetByTimestamp: the earliest cached epoch, if it starts
        # at or before the log start offset.
        start = log.log_start_offset
        entries = log.leader_epoch_cache.entries
        epoch = entries[0].epoch if entries and entries[0].start_offset <= start else -1
        return -1, start, epoch
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return -1, -1, -1
    found = log.fetch_offset_by_timestamp(timestamp)
    if found is None or found.offset >= hw:
        return -1, -1, -1
    return found.timestamp, found.offset, found.leader_epoch


def _authorized(ctx: RequestContext, request: Any) -> set[str]:
    """ACLs (``KafkaApis.handleListOffsetRequest``): DESCRIBE on each topic."""
    names = (t.name for t in request.topics)
    return filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": -1,
        "offset": -1,
        "leader_epoch": -1,
    }


def _handle_v0(ctx: RequestContext, request: LegacyListOffsetsRequest) -> HandlerResult:
    from_consumer = request.replica_id == CONSUMER_REPLICA_ID
    require_leader = request.replica_id != DEBUGGING_CONSUMER_ID
    topics = []
    authorized = _authorized(ctx, request)
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            offsets: list[int] = []
            tp = TopicPartition(topic.name, p.partition_index)
            partition = local_partition(ctx.services, tp, require_leader=require_leader)
            if topic.name not in authorized:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif isinstance(partition, ErrorCode):
                code = partition
            else:
                try:
                    offsets = _legacy_offsets_before(
                        partition, p.timestamp, p.max_num_offsets, ctx.services.clock.wall_ms()
                    )
                except Exception as exc:
                    code = error_code_for(exc)
                else:
                    code = ErrorCode.NONE
                    hw = partition.high_watermark
                    if from_consumer and any(offset > hw for offset in offsets):
                        offsets = [hw, *(offset for offset in offsets if offset <= hw)]
            partitions.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": code,
                    "old_style_offsets": offsets,
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return RawBody([encode_list_offsets_v0_response(topics)])


def _legacy_offsets_before(
    partition: Any, timestamp: int, max_num_offsets: int, now: int
) -> list[int]:
    """Kafka's ``UnifiedLog.legacyFetchOffsetsBefore``: up to ``max_num_offsets`` segment
    base offsets (and the log end offset), newest first, of the segments last modified at or
    before ``timestamp`` (-1: from the newest, -2: the first only)."""
    log = partition.log
    segments = list(log.segments)
    offset_times = [
        (max(seg.base_offset, log.log_start_offset), os.fstat(seg.fd).st_mtime_ns // 1_000_000)
        for seg in segments
    ]
    if segments and segments[-1].size > 0:
        offset_times.append((log.log_end_offset, now))
    if timestamp == LATEST_TIMESTAMP:
        start = len(offset_times) - 1
    elif timestamp == EARLIEST_TIMESTAMP:
        start = 0
    else:
        start = len(offset_times) - 1
        while start >= 0 and offset_times[start][1] > timestamp:
            start -= 1
    count = max(min(max_num_offsets, start + 1), 0)
    return sorted((offset_times[start - j][0] for j in range(count)), reverse=True)
