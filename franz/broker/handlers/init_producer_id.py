"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id (the idempotent producer, KIP-98) Kafka's coordinator "blindly
accepts the request and returns a new producerId" with epoch 0, even when the request names
an existing id and epoch (KIP-360's bump applies to transactional producers). Ids come from
blocks reserved durably in the metadata store (Kafka's ``ProducerIdManager`` blocks of 1000),
so no id is handed out twice across restarts.

A transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) until Franz has a
transaction coordinator: clients normally stop earlier, at FindCoordinator (key type 1), which
answers the same code with ``TRANSACTIONS_UNSUPPORTED`` as its message (the reasons for that
code are in ``find_coordinator``); a client that skips the lookup gets the same fatal error
here (librdkafka ``rd_kafka_handle_InitProducerId``, kafka-python ``InitProducerIdHandler``
and aiokafka ``Sender._do_init_pid`` all treat 53 as fatal; COORDINATOR_NOT_AVAILABLE, the
answer before, made them retry). The refusal is logged (``RequestContext.refused``).
"""

from __future__ import annotations

from typing import Any, Final

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["TRANSACTIONS_UNSUPPORTED", "handle"]

#: The error message clients show for a refused transactional id (FindCoordinator v1+).
TRANSACTIONS_UNSUPPORTED: Final = (
    "Franz does not support transactions yet: unset transactional.id "
    "(an idempotent producer, enable.idempotence=true, is supported)"
)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if request.transactional_id is not None:
        ctx.refused(
            "transactions", f"InitProducerId for transactional id {request.transactional_id!r}"
        )
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    producer_id = ctx.services.producer_ids.next_id()
    return {"throttle_time": 0, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
