"""LeaderAndIsr (4), v0-7 (Kafka 3.9's ``KafkaApis.handleLeaderAndIsrRequest`` and
``ReplicaManager.becomeLeaderOrFollower``): the controller makes this broker leader or
follower of partitions.

Served in cluster mode only (``zookeeper.connect`` set), as the ZooKeeper-mode broker it
mirrors; v0-6 are read as v7 (``franz.controller.old_versions``); the embedded mode's
controller delivers its LeaderAndIsr in process to the same
``franz.broker.control_requests.apply_leader_and_isr``. The response lists the
partitions by topic name up to v4 (``partition_errors``) and by topic id from v5 (``topics``),
in request order. Whole-request refusals (``franz.broker.controller_fencing``): STALE_BROKER_EPOCH,
STALE_CONTROLLER_EPOCH, UNSUPPORTED_VERSION; every partition of the request then carries the
same code, as Kafka's ``getErrorResponse``. Per partition (``ReplicaManager``):
UNKNOWN_TOPIC_OR_PARTITION when this broker is not among the replicas, STALE_CONTROLLER_EPOCH
for a leader epoch older than the replica's (Kafka's choice of code), KAFKA_STORAGE_ERROR
when the log cannot be created.

Before applying, the topics' records (assignment, config overrides) are read from the
metadata store for the topics this broker does not know yet, so new logs get the topic's
config (Kafka's ``LogManager`` reads ``/config/topics/<t>`` likewise).
"""

from __future__ import annotations

import logging
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.control_requests import apply_leader_and_isr
from franz.broker.controller_fencing import controller_request_error, to_value
from franz.controller.requests import LeaderAndIsrRequest
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition

__all__ = ["handle"]

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    value = to_value(ctx, request)
    if value is None:
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "topics": []}
    assert isinstance(value, LeaderAndIsrRequest)
    error = controller_request_error(ctx, value)
    if error != ErrorCode.NONE:
        return _response(value, error, {})
    services = ctx.services
    await services.topic_manager.refresh_topics(
        {t.topic_name: [p.partition_index for p in t.partition_states] for t in value.topic_states}
    )
    codes = apply_leader_and_isr(services, value)
    if codes:
        log.info("LeaderAndIsr from controller %d: partition errors %s", value.controller_id, codes)
    return _response(value, ErrorCode.NONE, codes)


def _response(
    request: LeaderAndIsrRequest, top: ErrorCode, codes: dict[TopicPartition, ErrorCode]
) -> dict[str, Any]:
    def code(topic: str, partition: int) -> ErrorCode:
        if top != ErrorCode.NONE:
            return top
        return codes.get(TopicPartition(topic, partition), ErrorCode.NONE)

    return {
        "error_code": top,
        # v0-4
        "partition_errors": [
            {
                "topic_name": topic.topic_name,
                "partition_index": p.partition_index,
                "error_code": code(topic.topic_name, p.partition_index),
            }
            for topic in request.topic_states
            for p in topic.partition_states
        ],
        # v5+
        "topics": [
            {
                "topic_id": topic.topic_id,
                "partition_errors": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": code(topic.topic_name, p.partition_index),
                    }
                    for p in topic.partition_states
                ],
            }
            for topic in request.topic_states
        ],
    }
