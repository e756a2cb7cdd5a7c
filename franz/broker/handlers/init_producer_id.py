"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id (the idempotent producer, KIP-98) Kafka's coordinator "blindly
accepts the request and returns a new producerId" with epoch 0, even when the request names
an existing id and epoch (KIP-360's bump applies to transactional producers). Ids come from
blocks reserved durably in the metadata store (Kafka's ``ProducerIdManager`` blocks of 1000),
so no id is handed out twice across restarts.

A transactional id is refused with COORDINATOR_NOT_AVAILABLE: Franz has no transaction
coordinator yet (clients could not have found one: FindCoordinator is not served).
"""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if request.transactional_id is not None:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    producer_id = ctx.broker.producer_ids.next_id()
    return {"throttle_time": 0, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
