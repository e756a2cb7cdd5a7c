"""ListPartitionReassignments (46), v0 (KIP-455): the partition moves in progress.

Kafka 3.9 in ZooKeeper mode (``KafkaApis.handleListPartitionReassignmentsRequest`` ->
``KafkaController.listPartitionReassignments``): answered by the active controller,
NOT_CONTROLLER (top level) by any other broker. ``topics`` null lists every partition being
reassigned; otherwise those named that are (an unknown or idle partition is left out, with no
error). Each is listed with its replica set while moving (RS = target + origin), the replicas
being added and those being removed, grouped by topic.

Embedded single-node mode: the broker's own controller answers; with one broker nothing is
ever moving, so the list is empty.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.controller.model import TopicPartition
from franz.controller.reassignment import ApiError, ListReassignmentsResult
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    partitions: frozenset[TopicPartition] | None = None
    if request.topics is not None:
        partitions = frozenset(
            TopicPartition(t.name, int(p)) for t in request.topics for p in t.partition_indexes
        )
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return response(
            ListReassignmentsResult(ApiError.of(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        )
    if ctx.services.zk_mode:
        return _handle_cluster(ctx, partitions)
    controller = ctx.services.topic_manager.controller
    if controller is None:
        return response(ListReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER)))
    return response(controller.list_partition_reassignments(partitions))


async def _handle_cluster(
    ctx: RequestContext, partitions: frozenset[TopicPartition] | None
) -> HandlerResult:
    controller = ctx.services.controller
    if controller is None:
        return response(ListReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER)))
    return response(await controller.list_partition_reassignments(partitions))


def response(result: ListReassignmentsResult) -> HandlerResult:
    """Kafka's ``sendResponseCallback``: a top-level error alone, or the moves by topic."""
    if result.error.code != ErrorCode.NONE:
        return {
            "throttle_time": 0,
            "error_code": result.error.code,
            "error_message": result.error.message,
            "topics": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, assignment in result.reassignments.items():
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "replicas": list(assignment.replicas),
                "adding_replicas": list(assignment.adding_replicas),
                "removing_replicas": list(assignment.removing_replicas),
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        # Not set by Kafka on success: the generated message's default, an empty string.
        "error_message": "",
        "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
