"""FindCoordinator (10): which broker coordinates a group (or a transactional id).

Single-node mode: this broker coordinates every group. As in Kafka, the first lookup of a group
creates ``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions, compacted); if that
fails the answer is COORDINATOR_NOT_AVAILABLE and the client retries. Transactional ids get
COORDINATOR_NOT_AVAILABLE, as Franz has no transaction coordinator. v4+ batches keys (KIP-699).

Why it is served before the group APIs: librdkafka switches on LZ4 (and its group client)
only when the broker advertises FindCoordinator (its feature map uses FindCoordinator v0 as
the marker of a 0.9+ broker with working LZ4 framing), so without it confluent-kafka and kcat
silently produce lz4-configured topics uncompressed.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]

log = logging.getLogger(__name__)

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    key_type = getattr(request, "key_type", GROUP_KEY)
    keys = getattr(request, "coordinator_keys", None)
    if keys is None:  # v0-3: one key
        result = _find(ctx, key_type)
        return {"throttle_time": 0, **result}
    return {
        "throttle_time": 0,
        "coordinators": [{"key": key, **_find(ctx, key_type)} for key in keys],
    }


def _find(ctx: RequestContext, key_type: int) -> dict[str, Any]:
    if key_type == GROUP_KEY:
        try:
            ctx.broker.offsets_log.ensure_topic()
        except Exception:
            log.exception("creating __consumer_offsets failed")
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        host, port = ctx.broker.advertised_address
        return {
            "error_code": 0,
            "error_message": None,
            "node_id": ctx.broker.broker_id,
            "host": host,
            "port": port,
        }
    return _error(
        ErrorCode.COORDINATOR_NOT_AVAILABLE
        if key_type == TRANSACTION_KEY
        else ErrorCode.INVALID_REQUEST
    )


def _error(code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": code.message,
        "node_id": -1,
        "host": "",
        "port": -1,
    }
