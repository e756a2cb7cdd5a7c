"""LeaderAndIsr (4), applied at v7 (Kafka 3.9's ``KafkaApis.handleLeaderAndIsrRequest`` and
``ReplicaManager.becomeLeaderOrFollower``): the controller makes this broker leader or
follower of partitions.

Served in cluster mode only (``zookeeper.connect`` set), as the ZooKeeper-mode broker it
mirrors; the embedded mode's controller delivers its LeaderAndIsr in process to the same
``franz.broker.control_requests.apply_leader_and_isr``. Whole-request refusals
(``franz.broker.controller_fencing``): STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH,
UNSUPPORTED_VERSION; every partition of the request then carries the same code, as Kafka's
``getErrorResponse``. Per partition (``ReplicaManager``): UNKNOWN_TOPIC_OR_PARTITION when this
broker is not among the replicas, STALE_CONTROLLER_EPOCH for a leader epoch older than the
replica's (Kafka's choice of code), KAFKA_STORAGE_ERROR when the log cannot be created.

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
    return {
        "error_code": top,
        "topics": [
            {
                "topic_id": topic.topic_id,
                "partition_errors": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": top
                        if top != ErrorCode.NONE
                        else codes.get(
                            TopicPartition(topic.topic_name, p.partition_index), ErrorCode.NONE
                        ),
                    }
                    for p in topic.partition_states
                ],
            }
            for topic in request.topic_states
        ],
    }
