"""EndTxn (26): commit or abort a producer's transaction.

The transaction coordinator logs PrepareCommit/PrepareAbort and answers; the markers and
the Complete* record follow (``franz.coordinator.transaction.coordinator`` has Kafka's rules,
including the answers to a retried EndTxn). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before
v2, as ``KafkaApis.handleEndTxnRequest``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers.add_partitions_to_txn import fenced_code
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> Awaitable[HandlerResult]:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if not authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return {"throttle_time": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    code = await ctx.services.txn_coordinator.handle_end_txn(
        request.transactional_id,
        int(request.producer_id),
        int(request.producer_epoch),
        bool(request.committed),
    )
    return {"throttle_time": 0, "error_code": fenced_code(code, ctx.api_version)}
