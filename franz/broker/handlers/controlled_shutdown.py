"""ControlledShutdown (7), v0-v3 (Kafka 3.9's ``KafkaApis.handleControlledShutdownRequest``): a
broker about to stop asks the controller to move its leaderships away first.

Served in cluster mode only, by every broker, as in Kafka; only the active controller acts on
it (``franz.controller.shell.controlled_shutdown``): any other broker answers NOT_CONTROLLER.
The request waits for the controller's event queue and is answered on its own connection with
the error and the partitions the broker still leads. v0-v1 carry no broker epoch (-1, never
stale); from v2 a broker epoch older than the broker's registration gets STALE_BROKER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.controller.shell.controlled_shutdown import NO_BROKER_EPOCH
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    controller = ctx.services.controller
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "remaining_partitions": []}
    if controller is None:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    broker_epoch = int(getattr(request, "broker_epoch", NO_BROKER_EPOCH))
    result = await controller.controlled_shutdown(int(request.broker_id), broker_epoch)
    return {
        "error_code": result.error_code,
        "remaining_partitions": [
            {"topic_name": tp.topic, "partition_index": tp.partition}
            for tp in sorted(result.remaining_partitions)
        ],
    }
