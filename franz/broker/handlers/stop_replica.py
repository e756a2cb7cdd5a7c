"""StopReplica (5), v0-4 (Kafka 3.9's ``KafkaApis.handleStopReplicaRequest`` and
``ReplicaManager.stopReplicas``): the controller tells this broker to stop replicas, and with
``delete_partition`` to delete their logs (topic deletion, reassignment).

Served in cluster mode only (the embedded mode's controller delivers its StopReplica in process
to the same ``franz.broker.control_requests.apply_stop_replica``); v0-3 are read as v4
(``franz.controller.old_versions``: below v3 one ``delete_partitions`` for all and no leader
epoch, -1). Whole-request refusals as
``franz.broker.controller_fencing``, with no partitions listed (Kafka's ``stopReplicas``
answers an empty map with the code; compared with Kafka by ``test_differential``). Per
partition: FENCED_LEADER_EPOCH for a leader epoch not newer than the replica's (-1 and -2,
``EpochDuringDelete``, always stop), KAFKA_STORAGE_ERROR when the log cannot be deleted.
Deleting a ``__consumer_offsets`` partition tells the group coordinator through the replica
manager's leadership listeners (Kafka's ``groupCoordinator.onResignation``).
"""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.control_requests import apply_stop_replica
from franz.broker.controller_fencing import controller_request_error, to_value
from franz.controller.requests import StopReplicaRequest
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    value = to_value(ctx, request)
    if value is None:
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "partition_errors": []}
    assert isinstance(value, StopReplicaRequest)
    error = controller_request_error(ctx, value)
    codes: dict[TopicPartition, ErrorCode] = {}
    if error == ErrorCode.NONE:
        codes = apply_stop_replica(ctx.services, value)
    return {
        "error_code": error,
        "partition_errors": [
            {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": code}
            for tp, code in codes.items()
        ],
    }
