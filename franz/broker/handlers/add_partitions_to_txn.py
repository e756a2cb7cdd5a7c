"""AddPartitionsToTxn (24): add partitions to a producer's ongoing transaction.

v0-3 are the clients' (one transaction; ``franz.coordinator.transaction.coordinator`` has
Kafka's rules). As ``KafkaApis.handleAddPartitionsToTxnRequest``: partitions of topics the
metadata cache does not know get UNKNOWN_TOPIC_OR_PARTITION and, when any does, the others
OPERATION_NOT_ATTEMPTED, and nothing is added; otherwise every partition gets the
coordinator's answer. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (the older
clients do not know it).

v4+ are the brokers' (KIP-890 part 1: a partition leader verifying that a transactional
produce's partition is in the transaction): a batch of transactions, each answered alone;
``VerifyOnly`` ones answer per partition NONE (in the transaction) or INVALID_TXN_STATE (not
in it) without changing anything (``handleVerifyPartitionsInTransaction``), others are added
as from v3. The top-level error is NONE.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Final

from franz.broker.authz import authorize_cluster, txn_partitions_denied
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["fenced_code", "handle"]

#: The first version that knows PRODUCER_FENCED (older ones get INVALID_PRODUCER_EPOCH).
PRODUCER_FENCED_VERSION: Final = 2
#: The first broker-to-broker (batched) version.
BATCHED_VERSION: Final = 4


def fenced_code(
    code: ErrorCode, version: int, first_version: int = PRODUCER_FENCED_VERSION
) -> ErrorCode:
    """Kafka's mapping of PRODUCER_FENCED for versions that predate it (KIP-588)."""
    if code is ErrorCode.PRODUCER_FENCED and version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def handle(ctx: RequestContext, request: Any) -> Awaitable[HandlerResult]:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if ctx.api_version < BATCHED_VERSION:
        results = await _add(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            verify_only=False,
        )
        return {"throttle_time": 0, "results_by_topic_v3_and_below": results}
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        # v4+ are the brokers' (KIP-890): CLUSTER_ACTION on the cluster.
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "results_by_transaction": [],
        }
    transactions = []
    for txn in request.transactions:
        results = await _add(
            ctx,
            txn.transactional_id,
            txn.producer_id,
            txn.producer_epoch,
            txn.topics,
            verify_only=bool(txn.verify_only),
        )
        transactions.append({"transactional_id": txn.transactional_id, "topic_results": results})
    return {"throttle_time": 0, "error_code": 0, "results_by_transaction": transactions}


async def _add(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    verify_only: bool,
) -> list[dict[str, Any]]:
    partitions = [(t.name, int(p)) for t in topics for p in t.partitions]
    cache = ctx.services.metadata_cache
    unknown = {tp for tp in partitions if cache.partition_info(*tp) is None}
    coordinator = ctx.services.txn_coordinator
    outcome: dict[tuple[str, int], ErrorCode]
    denied = None
    if ctx.api_version < BATCHED_VERSION:
        denied = txn_partitions_denied(ctx, transactional_id, partitions)
    if denied is not None:
        outcome = denied
    elif unknown:
        outcome = {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in partitions
        }
    elif verify_only:
        outcome = coordinator.verify_partitions(
            transactional_id, int(producer_id), int(producer_epoch), partitions
        )
    else:
        code = await coordinator.handle_add_partitions(
            transactional_id, int(producer_id), int(producer_epoch), partitions
        )
        outcome = dict.fromkeys(partitions, fenced_code(code, ctx.api_version))
    return _results(outcome)


def _results(outcome: dict[tuple[str, int], ErrorCode]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), code in outcome.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "partition_error_code": code}
        )
    return [{"name": t, "results_by_partition": r} for t, r in by_topic.items()]
