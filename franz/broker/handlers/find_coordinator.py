"""FindCoordinator (10): which broker coordinates a group (or a transactional id).

A group's coordinator is the leader of its ``__consumer_offsets`` partition,
``abs(hashCode(group_id)) % partitions`` with Java's ``String.hashCode`` (Kafka's
``partitionFor``), read from the metadata cache; in the embedded single-node mode that is
this broker for every group. As in Kafka, the first lookup of a group creates
``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions, compacted, replication
factor ``offsets.topic.replication.factor`` in cluster mode: ``franz.broker.offsets_log``);
if that fails (in cluster mode: fewer live brokers than the factor) the answer is
COORDINATOR_NOT_AVAILABLE and the client retries. v4+ batches keys (KIP-699).

A transactional id (key type 1) is coordinated by the leader of its ``__transaction_state``
partition (``TransactionStateManager.partitionFor``, the same hash); the first lookup creates
the topic (``franz.broker.txn_log``: ``transaction.state.log.*``), with the same
COORDINATOR_NOT_AVAILABLE answer while it cannot be created.

An unknown key type is INVALID_REQUEST.

Why it is served before the group APIs: librdkafka switches on LZ4 (and its group client)
only when the broker advertises FindCoordinator (its feature map uses FindCoordinator v0 as
the marker of a 0.9+ broker with working LZ4 framing), so without it confluent-kafka and kcat
silently produce lz4-configured topics uncompressed.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext
from franz.coordinator.group.offsets_schema import partition_for
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from franz.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from franz.errors import ErrorCode, InvalidReplicationFactorError
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

log = logging.getLogger(__name__)

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    key_type = getattr(request, "key_type", GROUP_KEY)
    keys = getattr(request, "coordinator_keys", None)
    if keys is None:  # v0-3: one key
        result = _find(ctx, key_type, getattr(request, "key", ""))
        if result["error_message"] is None:
            # Kafka 3.9 answers v0-3 with ``Errors.NONE.message()``; v4+ entries with "".
            result["error_message"] = "NONE"
        return {"throttle_time": 0, **result}
    return {
        "throttle_time": 0,
        "coordinators": [_coordinator(key, _find(ctx, key_type, key)) for key in keys],
    }


def _coordinator(key: str, result: dict[str, Any]) -> dict[str, Any]:
    if result["error_message"] is None:
        result["error_message"] = ""
    return {"key": key, **result}


def _find(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    # ACLs (KafkaApis.getCoordinator): DESCRIBE on the group or the transactional id.
    # Kafka sets no message on a v4+ coordinator entry ("" on the wire), error.message below.
    denied_message = "" if ctx.api_version >= 4 else None
    if key_type == GROUP_KEY and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return {**_error(ErrorCode.GROUP_AUTHORIZATION_FAILED), "error_message": denied_message}
    if key_type == TRANSACTION_KEY and not authorize(
        ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return {**_error(code), "error_message": denied_message}
    if key_type == GROUP_KEY:
        topic, ensure = OFFSETS_TOPIC, ctx.services.offsets_log.ensure_topic
    elif key_type == TRANSACTION_KEY:
        topic, ensure = TRANSACTION_STATE_TOPIC, ctx.services.txn_log.ensure_topic
    else:
        return _error(ErrorCode.INVALID_REQUEST)
    try:
        count = ensure()
    except InvalidReplicationFactorError as exc:
        # Kafka's ZkAdminManager logs this at INFO ("Error processing create topic
        # request"); clients retry until enough brokers are alive.
        log.info("cannot create %s yet: %s", topic, exc)
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    except Exception:
        log.exception("creating %s failed", topic)
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    # The leader of the key's partition, from the metadata cache (Kafka's
    # ``getCoordinator``): none alive on this listener is COORDINATOR_NOT_AVAILABLE.
    cache = ctx.services.metadata_cache
    leader = cache.partition_leader(topic, partition_for(key, count))
    node = None if leader is None else cache.alive_broker_node(leader.id, ctx.listener_name)
    if node is None:
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return {
        "error_code": 0,
        "error_message": None,  # v0-3: "NONE" (handle); v4+: ""
        "node_id": node.id,
        "host": node.host,
        "port": node.port,
    }


def _error(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message or code.message,
        "node_id": -1,
        "host": "",
        "port": -1,
    }
