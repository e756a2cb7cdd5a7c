"""ListTransactions (66, KIP-664; v1 adds DurationFilter, KIP-994): the transactional ids
this broker coordinates.

As ``TransactionStateManager.listTransactionStates``: COORDINATOR_LOAD_IN_PROGRESS while any
``__transaction_state`` partition loads; state filters that name no state are echoed in
``UnknownStateFilters`` (and match nothing); empty filters match all. Dead ids are left out.
A DurationFilter >= 0 keeps the transactions running for longer than that many ms (start time
more than that long ago), Kafka's ``now - txnStartTimestamp > durationFilter``.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.transaction.states import TransactionState
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    state = ctx.services.txn_coordinator.state
    if state.any_loading():
        return {"throttle_time": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    names = list(request.state_filters or ())
    unknown = [n for n in names if TransactionState.from_name(n) is None]
    wanted = {s for n in names if (s := TransactionState.from_name(n)) is not None}
    producer_ids = {int(p) for p in request.producer_id_filters or ()}
    duration = int(getattr(request, "duration_filter", -1))
    now = ctx.services.clock.wall_ms()
    listed = []
    for m in state.all_metadata():
        if m.state is TransactionState.DEAD:
            continue
        if names and m.state not in wanted:
            continue
        if producer_ids and m.producer_id not in producer_ids:
            continue
        if duration >= 0 and now - m.txn_start_timestamp <= duration:
            continue
        if not authorize(
            ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id
        ):
            continue  # KafkaApis.handleListTransactionsRequest lists the describable ones
        listed.append(
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.kafka_name,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": 0,
        "unknown_state_filters": unknown,
        "transaction_states": listed,
    }
