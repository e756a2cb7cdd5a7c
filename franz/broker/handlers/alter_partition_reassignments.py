"""AlterPartitionReassignments (45), v0 (KIP-455): move partitions to other replicas, or
cancel (``replicas`` null) a move in progress.

Kafka 3.9 in ZooKeeper mode (``KafkaApis.handleAlterPartitionReassignmentsRequest`` ->
``KafkaController.alterPartitionReassignments``): the request is handed to this broker's
controller, which answers NOT_CONTROLLER at top level unless it is the active one (the admin
client sends the request to the controller and retries elsewhere on NOT_CONTROLLER). The
answer comes once the controller has *started* each move (``franz.controller.shell.
reassignment``): per partition NONE, INVALID_REPLICA_ASSIGNMENT (empty, duplicate or negative
ids, an added replica not a live broker), NO_REASSIGNMENT_IN_PROGRESS (a cancellation with
nothing moving), UNKNOWN_TOPIC_OR_PARTITION ("The partition does not exist."; also a topic
being deleted), UNKNOWN_SERVER_ERROR (the move failed to start). A partition named twice is
taken once, with its last target (Kafka's ``toMap``). ``timeout_ms`` is not used, as Kafka.

Embedded single-node mode: the same checks by the broker's own controller
(``LocalController.alter_partition_reassignments``); with one live broker every accepted
target is the partition's replica set, and the move is complete at once (Kafka bumps the
leader epoch all the same).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.controller.model import TopicPartition
from franz.controller.reassignment import AlterReassignmentsResult, ApiError
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    reassignments: dict[TopicPartition, Sequence[int] | None] = {}
    for topic in request.topics:
        for partition in topic.partitions:
            tp = TopicPartition(topic.name, int(partition.partition_index))
            replicas = partition.replicas
            reassignments.pop(tp, None)  # the last one counts
            reassignments[tp] = None if replicas is None else tuple(int(r) for r in replicas)
    if not authorize_cluster(ctx, AclOperation.ALTER):
        # Kafka's getErrorResponse: the top-level error, and on every partition asked.
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {
            "throttle_time": 0,
            "error_code": denied,
            "error_message": denied.message,
            "responses": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": denied,
                            "error_message": denied.message,
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in request.topics
            ],
        }
    if ctx.services.zk_mode:
        return _handle_cluster(ctx, reassignments)
    controller = ctx.services.topic_manager.controller
    if controller is None:
        return response(AlterReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER)))
    return response(controller.alter_partition_reassignments(reassignments))


async def _handle_cluster(
    ctx: RequestContext, reassignments: Mapping[TopicPartition, Sequence[int] | None]
) -> HandlerResult:
    controller = ctx.services.controller
    if controller is None:
        return response(AlterReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER)))
    return response(await controller.alter_partition_reassignments(reassignments))


def response(result: AlterReassignmentsResult) -> HandlerResult:
    """Kafka's ``sendResponseCallback``: a top-level error alone, or the partitions grouped
    by topic."""
    if result.error.code != ErrorCode.NONE:
        return {
            "throttle_time": 0,
            "error_code": result.error.code,
            "error_message": result.error.message,
            "responses": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, error in result.partitions.items():
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "error_code": error.code,
                "error_message": error.message,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        # Not set by Kafka on success: the generated message's default, an empty string.
        "error_message": "",
        "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
