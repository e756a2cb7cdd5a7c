"""FindCoordinator (10): which broker coordinates a group (or a transactional id).

A group's coordinator is the leader of its ``__consumer_offsets`` partition,
``abs(hashCode(group_id)) % partitions`` with Java's ``String.hashCode`` (Kafka's
``partitionFor``), read from the metadata cache; in the embedded single-node mode that is
this broker for every group. As in Kafka, the first lookup of a group creates
``__consumer_offsets`` (``offsets.topic.num.partitions`` partitions, compacted, replication
factor ``offsets.topic.replication.factor`` in cluster mode: ``franz.broker.offsets_log``);
if that fails (in cluster mode: fewer live brokers than the factor) the answer is
COORDINATOR_NOT_AVAILABLE and the client retries. v4+ batches keys (KIP-699).

Transactional ids (key type 1) get TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), with an error
message saying why, until Franz has a transaction coordinator. Why that code: it is the one
error of a transaction-coordinator lookup every client treats as fatal at once, so
``init_transactions()`` fails in milliseconds with the broker's message instead of retrying
COORDINATOR_NOT_AVAILABLE (retriable) until its timeout and then blaming a "coordinator":

* librdkafka (``rd_kafka_txn_handle_FindCoordinator``): 53 raises a fatal error, "Failed to
  find transaction coordinator: <broker>: Broker: Transactional Id authorization failed:
  <error_message>"; every other code retries;
* kafka-python (``FindCoordinatorHandler``): 53 is ``fatal_error``; retriable codes re-enqueue;
* aiokafka (``Sender._find_coordinator``): 53 is re-raised as
  ``TransactionalIdAuthorizationFailed``; COORDINATOR_NOT_AVAILABLE loops forever;
* KafkaJS (``cluster.findGroupCoordinator``): retries only COORDINATOR_NOT_AVAILABLE and an
  unknown broker, and ``bail``s with any other code (53 is non-retriable in its error table).

An unknown key type is INVALID_REQUEST.

Why it is served before the group APIs: librdkafka switches on LZ4 (and its group client)
only when the broker advertises FindCoordinator (its feature map uses FindCoordinator v0 as
the marker of a 0.9+ broker with working LZ4 framing), so without it confluent-kafka and kcat
silently produce lz4-configured topics uncompressed.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers.init_producer_id import TRANSACTIONS_UNSUPPORTED
from franz.coordinator.group.offsets_schema import partition_for
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from franz.errors import ErrorCode, InvalidReplicationFactorError

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
    if key_type == GROUP_KEY:
        try:
            count = ctx.services.offsets_log.ensure_topic()
        except InvalidReplicationFactorError as exc:
            # Kafka's ZkAdminManager logs this at INFO ("Error processing create topic
            # request"); clients retry until enough brokers are alive.
            log.info("cannot create %s yet: %s", OFFSETS_TOPIC, exc)
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        except Exception:
            log.exception("creating __consumer_offsets failed")
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        # The leader of the group's partition, from the metadata cache (Kafka's
        # ``getCoordinator``): none alive on this listener is COORDINATOR_NOT_AVAILABLE.
        cache = ctx.services.metadata_cache
        leader = cache.partition_leader(OFFSETS_TOPIC, partition_for(key, count))
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
    if key_type == TRANSACTION_KEY:
        ctx.refused("transactions", f"FindCoordinator for transactional id {key!r}")
        return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_UNSUPPORTED)
    return _error(ErrorCode.INVALID_REQUEST)


def _error(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message or code.message,
        "node_id": -1,
        "host": "",
        "port": -1,
    }
