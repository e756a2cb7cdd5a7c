"""AddOffsetsToTxn (25): add a group's ``__consumer_offsets`` partition to a transaction.

As ``KafkaApis.handleAddOffsetsToTxnRequest``: the partition is the group's
(``partition_for(group_id, offsets partitions)``, the group coordinator's ``partitionFor``),
added through the transaction coordinator like AddPartitionsToTxn's (its rules in
``franz.coordinator.transaction.coordinator``); TxnOffsetCommit to the group coordinator
then writes the offsets, which the transaction's markers commit or abort. PRODUCER_FENCED
is INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers.add_partitions_to_txn import fenced_code
from franz.coordinator.group.offsets_schema import partition_for
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> Awaitable[HandlerResult]:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    # ACLs (KafkaApis.handleAddOffsetsToTxnRequest): WRITE on the transactional id, READ on
    # the group.
    if not authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return {"throttle_time": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    count = services.offsets_log.partition_count() or services.config.get(
        "offsets.topic.num.partitions"
    )
    tp = (OFFSETS_TOPIC, partition_for(request.group_id, count))
    code = await services.txn_coordinator.handle_add_partitions(
        request.transactional_id, int(request.producer_id), int(request.producer_epoch), [tp]
    )
    return {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version)}
