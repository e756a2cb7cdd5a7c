"""Metadata (3): brokers, cluster id, controller, topics with their partitions.

Requested topics that do not exist are created when both ``auto.create.topics.enable`` and
the request's ``allow_auto_topic_creation`` (v4+; always true before) say so. In single-node
mode creation is synchronous, so the new topic is described in the same response instead of
Kafka's first LEADER_NOT_AVAILABLE. Topics requested by id (v10+) that do not exist get
UNKNOWN_TOPIC_ID; invalid names INVALID_TOPIC_EXCEPTION. A partition whose log dir failed
has no leader (LEADER_NOT_AVAILABLE, leader -1, this broker offline: ``_offline_partition``).

Authorized operations (v8+, ``franz.broker.authorized_operations``): with
``include_topic_authorized_operations`` every topic looked up by name, found or not, carries
every TOPIC operation (Franz has no authorizer), as Kafka's ``handleTopicMetadataRequest``
sets them on its ``topicMetadata``; a topic id that is not found keeps the "omitted" value.
``include_cluster_authorized_operations`` (v8-10; v11 dropped the field, KIP-700) gives every
CLUSTER operation. Unasked, both are ``Integer.MIN_VALUE``.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authorized_operations import (
    CLUSTER_OPERATIONS,
    OPERATIONS_OMITTED,
    TOPIC_OPERATIONS,
)
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.topic_manager import validate_topic_name
from franz.cluster.partition import Partition
from franz.errors import ApiError, ErrorCode, error_code_for
from franz.metadata.store import TopicRecord
from franz.storage.files import TopicPartition

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    version = ctx.api_version
    topics = services.topic_manager
    requested = request.topics
    allow_auto_create = getattr(request, "allow_auto_topic_creation", True)
    results: list[dict[str, Any]] = []
    if requested is None or (version == 0 and not requested):
        for existing in sorted(topics.topics().values(), key=lambda r: r.name):
            results.append(describe_topic(ctx, existing))
    else:
        for entry in requested:
            name: str | None = getattr(entry, "name", None)
            topic_id = getattr(entry, "topic_id", None)
            record: TopicRecord | None
            if not name and topic_id is not None and topic_id.int != 0:
                record = topics.by_id(topic_id)
                if record is None:
                    results.append(
                        _error_topic(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
                    )
                else:
                    results.append(describe_topic(ctx, record))
                continue
            try:
                name = validate_topic_name(name)
            except ApiError as exc:
                results.append(_error_topic(name, None, exc.code))
                continue
            record = topics.get(name)
            if record is None and allow_auto_create:
                try:
                    record = topics.maybe_auto_create(name)
                except ApiError as exc:
                    results.append(_error_topic(name, None, error_code_for(exc)))
                    continue
            if record is None:
                results.append(_error_topic(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                results.append(describe_topic(ctx, record))
    if version >= 8 and getattr(request, "include_topic_authorized_operations", False):
        for result in results:
            if result["name"] is not None:
                result["topic_authorized_operations"] = TOPIC_OPERATIONS
    cluster_operations = OPERATIONS_OMITTED
    if 8 <= version <= 10 and getattr(request, "include_cluster_authorized_operations", False):
        cluster_operations = CLUSTER_OPERATIONS
    host, port = services.advertised_address
    return {
        "throttle_time": 0,
        "brokers": [
            {"node_id": services.broker_id, "host": host, "port": port, "rack": services.rack}
        ],
        "cluster_id": services.cluster_id,
        "controller_id": services.broker_id,
        "topics": results,
        "cluster_authorized_operations": cluster_operations,
    }


def _error_topic(name: str | None, topic_id: Any, code: ErrorCode) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_code": code,
        "name": name,
        "is_internal": False,
        "partitions": [],
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }
    if topic_id is not None:
        out["topic_id"] = topic_id
    return out


def describe_topic(ctx: RequestContext, record: TopicRecord) -> dict[str, Any]:
    replica_manager = ctx.services.replica_manager
    partitions = []
    for index, replicas in sorted(record.assignment.items()):
        partition = replica_manager.partitions.get(TopicPartition(record.name, index))
        if partition is None:
            partitions.append(
                {
                    "error_code": ErrorCode.LEADER_NOT_AVAILABLE,
                    "partition_index": index,
                    "leader_id": -1,
                    "leader_epoch": -1,
                    "replica_nodes": replicas,
                    "isr_nodes": [],
                    "offline_replicas": replicas,
                }
            )
            continue
        if partition.log.offline:
            partitions.append(_offline_partition(ctx, partition, index))
            continue
        partitions.append(
            {
                "error_code": 0,
                "partition_index": index,
                "leader_id": partition.leader_id,
                "leader_epoch": partition.leader_epoch,
                "replica_nodes": partition.replicas,
                "isr_nodes": partition.isr,
                "offline_replicas": [],
            }
        )
    return {
        "error_code": 0,
        "name": record.name,
        "topic_id": record.topic_id,
        "is_internal": ctx.services.topic_manager.is_internal(record.name),
        "partitions": partitions,
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }


def _offline_partition(ctx: RequestContext, partition: Partition, index: int) -> dict[str, Any]:
    """A partition whose log dir failed, as a ZooKeeper-era Kafka cluster then shows it: the
    controller moves leadership off the offline replica (``OfflineReplica``: leader -1, the
    last ISR member kept), and with no other replica the partition has no leader, so Metadata
    answers LEADER_NOT_AVAILABLE with this broker among the offline replicas. Clients then
    hold their records for the partition (and fail them at their delivery timeout) instead
    of sending them here; requests that do arrive get KAFKA_STORAGE_ERROR from the log."""
    return {
        "error_code": ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": index,
        "leader_id": -1,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": partition.replicas,
        "isr_nodes": partition.isr,
        "offline_replicas": [ctx.services.broker_id],
    }
