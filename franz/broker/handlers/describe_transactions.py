"""DescribeTransactions (65, KIP-664): the state of transactional ids this broker coordinates.

As ``TransactionCoordinator.handleDescribeTransactions``: per id, NOT_COORDINATOR when its
``__transaction_state`` partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while it
loads, INVALID_REQUEST for an empty id, TRANSACTIONAL_ID_NOT_FOUND for an unknown (or
expiring, Dead) id; else its state's name, producer id and epoch, timeout, start time and
partitions by topic.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.transaction.state_manager import CoordinatorEpochAndMetadata
from franz.coordinator.transaction.states import TransactionState
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

#: A start time of -1 (an id in Empty state: Kafka sends its ``txnStartTimestamp`` as it is).
#: kio's field is a non-nullable datetime and the protocol layer turns negative numbers into
#: None (the null of nullable timestamps), which kio cannot write here; one millisecond before
#: the epoch is written as -1.
_MINUS_ONE_MS: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) - datetime.timedelta(
    milliseconds=1
)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    state = ctx.services.txn_coordinator.state
    return {
        "throttle_time": 0,
        "transaction_states": [
            _describe(state.get(tid) if tid else None, tid)
            if not tid or authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid)
            else _error(tid, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            for tid in request.transactional_ids
        ],
    }


def _describe(current: Any, transactional_id: str) -> dict[str, Any]:
    if not transactional_id:
        return _error(transactional_id, ErrorCode.INVALID_REQUEST)
    if isinstance(current, ErrorCode):
        return _error(transactional_id, current)
    if not isinstance(current, CoordinatorEpochAndMetadata):
        return _error(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    m = current.metadata
    if m.state is TransactionState.DEAD:
        return _error(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    topics: dict[str, list[int]] = {}
    for topic, index in sorted(m.topic_partitions):
        topics.setdefault(topic, []).append(index)
    return {
        "error_code": 0,
        "transactional_id": transactional_id,
        "transaction_state": m.state.kafka_name,
        "transaction_timeout": m.txn_timeout_ms,
        "transaction_start_time": (
            m.txn_start_timestamp if m.txn_start_timestamp >= 0 else _MINUS_ONE_MS
        ),
        "producer_id": m.producer_id,
        "producer_epoch": m.producer_epoch,
        "topics": [{"topic": t, "partitions": ids} for t, ids in topics.items()],
    }


def _error(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    """An error entry as Kafka writes it: only the code and id set, every other field at the
    schema's default (``DescribeTransactionsResponse.json`` has none, so "" and zeros)."""
    return {
        "error_code": code,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout": 0,
        "transaction_start_time": 0,
        "producer_id": 0,
        "producer_epoch": 0,
        "topics": [],
    }
