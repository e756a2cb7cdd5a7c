"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id (the idempotent producer, KIP-98) Kafka's coordinator "blindly
accepts the request and returns a new producerId" with epoch 0, even when the request names
an existing id and epoch (KIP-360's bump applies to transactional producers). Ids come from
blocks reserved durably in the metadata store (Kafka's ``ProducerIdManager`` blocks of 1000;
in cluster mode ZooKeeper's ``/latest_producer_id_block``, ``franz.broker.producer_ids``), so
no id is handed out twice across restarts or brokers.

A transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) until Franz has a
transaction coordinator: clients normally stop earlier, at FindCoordinator (key type 1), which
answers the same code with ``TRANSACTIONS_UNSUPPORTED`` as its message (the reasons for that
code are in ``find_coordinator``); a client that skips the lookup gets the same fatal error
here (librdkafka ``rd_kafka_handle_InitProducerId``, kafka-python ``InitProducerIdHandler``
and aiokafka ``Sender._do_init_pid`` all treat 53 as fatal; COORDINATOR_NOT_AVAILABLE, the
answer before, made them retry). The refusal is logged (``RequestContext.refused``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any, Final

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["TRANSACTIONS_UNSUPPORTED", "handle"]

log = logging.getLogger(__name__)

#: Bound on a request's wait for a producer id block claimed in ZooKeeper.
_CLAIM_TIMEOUT_S: Final = 10.0

#: The error message clients show for a refused transactional id (FindCoordinator v1+).
TRANSACTIONS_UNSUPPORTED: Final = (
    "Franz does not support transactions yet: unset transactional.id "
    "(an idempotent producer, enable.idempotence=true, is supported)"
)


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
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
    producer_id = ctx.services.producer_ids.generate()
    if isinstance(producer_id, int):
        return _answer(producer_id)
    return _answer_when_claimed(producer_id)


async def _answer_when_claimed(pending: Awaitable[int]) -> HandlerResult:
    """Cluster mode with no id at hand: wait for the block claim in ZooKeeper; a failed
    claim answers COORDINATOR_LOAD_IN_PROGRESS, retriable (what Kafka's
    ``RPCProducerIdManager`` answers while it has no block)."""
    try:
        producer_id = await asyncio.wait_for(pending, _CLAIM_TIMEOUT_S)
    except Exception as exc:
        log.warning("InitProducerId: no producer id block available: %s", exc)
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return _answer(producer_id)


def _answer(producer_id: int) -> HandlerResult:
    return {"throttle_time": 0, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
