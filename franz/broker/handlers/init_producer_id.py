"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id (the idempotent producer, KIP-98) Kafka's coordinator "blindly
accepts the request and returns a new producerId" with epoch 0, even when the request names
an existing id and epoch (KIP-360's bump applies to transactional producers). Ids come from
blocks reserved durably in the metadata store (Kafka's ``ProducerIdManager`` blocks of 1000;
in cluster mode ZooKeeper's ``/latest_producer_id_block``, ``franz.broker.producer_ids``), so
no id is handed out twice across restarts or brokers.

With a transactional id the transaction coordinator answers
(``TransactionCoordinator.handle_init_producer_id``: KIP-98's epoch bump and fencing,
KIP-360's expected producer id and epoch, INVALID_TRANSACTION_TIMEOUT above
``transaction.max.timeout.ms``). As ``KafkaApis.handleInitProducerIdRequest``: a producer id
given without its epoch, or the reverse, is INVALID_REQUEST; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v4 (KIP-588).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, Final

from franz.broker.authz import authorize, authorize_by_resource_type, authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

log = logging.getLogger(__name__)

#: Bound on a request's wait for a producer id block claimed in ZooKeeper.
_CLAIM_TIMEOUT_S: Final = 10.0
#: The first version that knows PRODUCER_FENCED (KIP-588).
_PRODUCER_FENCED_VERSION: Final = 4


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    # ACLs (KafkaApis.handleInitProducerIdRequest, KIP-679): WRITE on the transactional id;
    # an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    if request.transactional_id is not None:
        if not authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
        ):
            return _failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return _transactional(ctx, request)
    if not authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE) and not (
        authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return _failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
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


async def _transactional(ctx: RequestContext, request: Any) -> HandlerResult:
    producer_id = int(getattr(request, "producer_id", -1))
    producer_epoch = int(getattr(request, "producer_epoch", -1))
    if (producer_id == -1) != (producer_epoch == -1):
        return _failed(ErrorCode.INVALID_REQUEST)
    expected = None if producer_id == -1 else (producer_id, producer_epoch)
    result = await ctx.services.txn_coordinator.handle_init_producer_id(
        request.transactional_id, _ms(request.transaction_timeout), expected
    )
    if result.error is not ErrorCode.NONE:
        code = result.error
        if code is ErrorCode.PRODUCER_FENCED and ctx.api_version < _PRODUCER_FENCED_VERSION:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return _failed(code)
    return {
        "throttle_time": 0,
        "error_code": 0,
        "producer_id": result.producer_id,
        "producer_epoch": result.producer_epoch,
    }


def _ms(value: Any) -> int:
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def _failed(code: ErrorCode) -> HandlerResult:
    return {"throttle_time": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


def _answer(producer_id: int) -> HandlerResult:
    return {"throttle_time": 0, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
