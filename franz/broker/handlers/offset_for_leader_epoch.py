"""OffsetsForLeaderEpoch (23): where a leader epoch ends on the leader (KIP-101, KIP-279,
KIP-320).

Followers of old inter-broker protocols asked it before fetching, to truncate diverged logs;
consumers (librdkafka, the Java client, KIP-320) ask it after a leader change to validate
their position: a position past the end offset of its epoch on the new leader means the log
was truncated under them.

Per partition, Kafka 3.9's ``ReplicaManager.lastOffsetForLeaderEpoch`` and
``Partition.lastOffsetForLeaderEpoch``, in this order:

1. A replica whose log dir is offline: KAFKA_STORAGE_ERROR; not hosted here:
   NOT_LEADER_OR_FOLLOWER when the metadata cache knows the partition, else
   UNKNOWN_TOPIC_OR_PARTITION (``franz.broker.leader_routing``).
2. ``current_leader_epoch`` (v2+; -1: none) fenced: older than this replica's
   FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
3. Not the leader: NOT_LEADER_OR_FOLLOWER. Kafka 3.9 always passes ``fetchOnlyFromLeader =
   true`` here, whatever the request's ``replica_id`` (v3+; -2, the debugging consumer, by
   default), so a follower never answers, not even a debugging consumer.
4. The leader-epoch cache's ``endOffsetFor`` (``franz.storage.leader_epoch``): the latest
   epoch ends at the log end offset, an older one where the next cached epoch starts, with
   the largest cached epoch at or below the requested one; -1 (UNDEFINED_EPOCH), an epoch
   above the latest, or an empty cache: leader_epoch -1 and end_offset -1 with NONE.

v0-1 (decoded and encoded by ``franz.protocol.legacy_versions``) carry no current leader
epoch; v0 answers carry no leader epoch. v2 adds throttle_time_ms, v4 is flexible.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster, authorizer_of, filter_authorized
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.broker.leader_routing import local_partition
from franz.errors import ErrorCode, error_code_for
from franz.protocol.legacy_versions import encode_offset_for_leader_epoch_v0_response
from franz.security.acl import AclOperation, ResourceType
from franz.storage.files import TopicPartition
from franz.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["handle"]

#: The first version with ``throttle_time_ms`` (kio's classes start there).
FIRST_KIO_VERSION = 2


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    authorized = _authorized(ctx, request)
    topics = [
        {
            "topic": topic.topic,
            "partitions": [
                _end_offset(ctx, TopicPartition(topic.topic, p.partition), p)
                if topic.topic in authorized
                else _error(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for p in topic.partitions
            ],
        }
        for topic in request.topics
    ]
    if ctx.api_version < FIRST_KIO_VERSION:
        return RawBody([encode_offset_for_leader_epoch_v0_response(ctx.api_version, topics)])
    return {"throttle_time": 0, "topics": topics}


def _authorized(ctx: RequestContext, request: Any) -> set[str]:
    """ACLs (``KafkaApis.handleOffsetForLeaderEpochRequest``): CLUSTER_ACTION on the cluster
    (a follower) allows every topic, else DESCRIBE on each topic (KIP-320's consumers)."""
    names = {t.topic for t in request.topics}
    if authorizer_of(ctx) is None or authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return names
    return filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _end_offset(ctx: RequestContext, tp: TopicPartition, p: Any) -> dict[str, Any]:
    hosted = ctx.services.replica_manager.partitions.get(tp)
    if hosted is not None and hosted.log.offline:
        return _error(tp.partition, ErrorCode.KAFKA_STORAGE_ERROR)
    partition = local_partition(
        ctx.services,
        tp,
        current_leader_epoch=getattr(p, "current_leader_epoch", -1),
        require_leader=True,
    )
    if isinstance(partition, ErrorCode):
        return _error(tp.partition, partition)
    try:
        log = partition.log
        epoch, end_offset = log.leader_epoch_cache.end_offset_for(
            p.leader_epoch, log.log_end_offset
        )
    except Exception as exc:
        return _error(tp.partition, error_code_for(exc))
    if end_offset == UNDEFINED_EPOCH_OFFSET:
        # Kafka's UnifiedLog.endOffsetForEpoch: None, and the response keeps its defaults.
        epoch = UNDEFINED_EPOCH
    return {
        "error_code": ErrorCode.NONE,
        "partition": tp.partition,
        "leader_epoch": epoch,
        "end_offset": end_offset,
    }


def _error(partition: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "partition": partition,
        "leader_epoch": UNDEFINED_EPOCH,
        "end_offset": UNDEFINED_EPOCH_OFFSET,
    }
