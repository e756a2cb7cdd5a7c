"""AlterPartition (56), v0-v3 (Kafka 3.9's ``KafkaApis.handleAlterPartitionRequest``, ZooKeeper
mode; KIP-497): a partition leader asks the controller to change the partition's ISR.

Served in cluster mode only, by every broker, as in Kafka; only the active controller acts on
it (``franz.controller.shell.alter_partition``): any other broker answers NOT_CONTROLLER at top
level with no topics (``AlterPartitionRequest.getErrorResponse``), and the leader looks for the
controller again. The request waits for the controller's event queue.

Versions: v0-v1 name topics, v2+ carry topic ids (the answer names them the same way); v1 adds
the leader recovery state (KIP-704); v3 sends the new ISR as ``new_isr_with_epochs`` (broker
id and epoch, KIP-903), of which the ZooKeeper controller uses the broker ids only. Error
answers carry zeros in the other partition fields, as Kafka's.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequestData,
    AlterPartitionTopicData,
)
from franz.controller.shell.alter_partition import AlterPartitionResult
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle", "request_data", "response_body"]


def request_data(request: Any) -> AlterPartitionRequestData:
    """The kio-style request as the controller's values."""
    version = int(type(request).__version__)
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            with_epochs = getattr(p, "new_isr_with_epochs", None)
            if with_epochs is not None:
                isr = tuple(int(b.broker_id) for b in with_epochs)
            else:
                isr = tuple(int(b) for b in p.new_isr)
            partitions.append(
                AlterPartitionData(
                    partition_index=int(p.partition_index),
                    leader_epoch=int(p.leader_epoch),
                    new_isr=isr,
                    leader_recovery_state=int(getattr(p, "leader_recovery_state", 0)),
                    partition_epoch=int(p.partition_epoch),
                )
            )
        name = getattr(topic, "topic_name", None)
        topics.append(
            AlterPartitionTopicData(
                topic_name=None if name is None else str(name),
                topic_id=getattr(topic, "topic_id", None),
                partitions=tuple(partitions),
            )
        )
    return AlterPartitionRequestData(
        version=version,
        broker_id=int(request.broker_id),
        broker_epoch=int(request.broker_epoch),
        topics=tuple(topics),
    )


def response_body(result: AlterPartitionResult) -> dict[str, Any]:
    """The response mapping (``franz.protocol.messages.build`` fits it to the version)."""
    topics = []
    for (name, topic_id), partitions in result.topics.items():
        rows = []
        for index, outcome in sorted(partitions.items()):
            row: dict[str, Any] = {"partition_index": index, "error_code": outcome.error}
            lai = outcome.leader_and_isr
            if lai is not None:
                row.update(
                    leader_id=lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    leader_recovery_state=int(lai.leader_recovery_state),
                    partition_epoch=lai.partition_epoch,
                )
            rows.append(row)
        topics.append({"topic_name": name, "topic_id": topic_id, "partitions": rows})
    return {"throttle_time_ms": 0, "error_code": result.error, "topics": topics}


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    controller = ctx.services.controller
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return response_body(AlterPartitionResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    if controller is None:
        return response_body(AlterPartitionResult(ErrorCode.NOT_CONTROLLER))
    result = await controller.alter_partition(request_data(request))
    return response_body(result)
