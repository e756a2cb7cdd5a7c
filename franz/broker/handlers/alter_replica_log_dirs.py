"""AlterReplicaLogDirs (34), v0-2 (KIP-113): move this broker's replicas of the named
partitions to the named log dirs (Kafka 3.9's ``KafkaApis.handleAlterReplicaLogDirsRequest``
-> ``ReplicaManager.alterReplicaLogDirs``; the logic and the per-partition error codes are
``franz.cluster.alter_log_dirs``). v0 is v1 (``franz.protocol.stand_ins``); v2 is flexible.

The request lists paths, each with topics and partitions; a partition named under two paths
goes to the last one (Kafka builds a map from the request). The answer is one result per
topic with its partitions. Kafka orders them by its hash maps; Franz keeps the request's
order. Kafka authorizes ALTER on the CLUSTER resource first; Franz has no ACLs, so every
request is authorized. The moves run after the answer (the copiers,
``ReplicaAlterLogDirsManager``): DescribeLogDirs shows their future replicas meanwhile.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation
from franz.storage.files import TopicPartition

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    partition_dirs: dict[TopicPartition, str] = {}
    for alter_dir in request.dirs:
        for topic in alter_dir.topics:
            for partition in topic.partitions:
                partition_dirs[TopicPartition(topic.name, int(partition))] = alter_dir.path
    manager = ctx.services.replica_manager.alter_log_dirs_manager
    if not authorize_cluster(ctx, AclOperation.ALTER):
        errors = dict.fromkeys(partition_dirs, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    elif manager is None:  # the broker always wires one; a bare ReplicaManager has none
        errors = dict.fromkeys(partition_dirs, ErrorCode.KAFKA_STORAGE_ERROR)
    else:
        errors = manager.alter_replica_log_dirs(partition_dirs)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in partition_dirs:
        by_topic.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": errors[tp]}
        )
    return {
        "throttle_time": 0,
        "results": [
            {"topic_name": topic, "partitions": partitions}
            for topic, partitions in by_topic.items()
        ],
    }
