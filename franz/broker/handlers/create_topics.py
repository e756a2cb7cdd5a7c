"""CreateTopics (19), v2-7: create topics, or with ``validate_only`` just check them.

Per topic (Kafka 3.9, ``ZkAdminManager.createTopics`` / KRaft ``ReplicationControlManager``):

* ``num_partitions`` / ``replication_factor`` of -1 take the broker defaults
  (``num.partitions``, ``default.replication.factor``; KIP-464). A manual ``assignments``
  list instead of both: partitions numbered 0..N-1, each on this broker only (the single live
  broker), else INVALID_REPLICA_ASSIGNMENT; both at once is INVALID_REQUEST.
* ``configs``: topic overrides, validated as AlterConfigs validates them (unknown name, bad
  value such as a ``compression.type`` outside Kafka's list: INVALID_CONFIG); a null value is
  INVALID_CONFIG ("Null value not supported for topic configs: ...", as Kafka 3.x).
* Errors: TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION (bad name, or a name colliding with
  an existing one once '.' and '_' are identified), INVALID_PARTITIONS,
  INVALID_REPLICATION_FACTOR (above 1: one broker), INVALID_REPLICA_ASSIGNMENT,
  INVALID_CONFIG, INVALID_REQUEST. A name given more than once in one request gets
  INVALID_REQUEST ("Found multiple entries for this topic.") on every entry and is not
  created, as in ``KafkaApis.handleCreateTopicsRequest``.
* v5+ answers with the topic's partition count, replication factor and every config (value,
  read-only, source, sensitive: ``franz.broker.configs``), also for ``validate_only``;
  v7 adds the new topic id (the zero UUID for ``validate_only`` and errors, as Kafka).

``timeout_ms`` plays no part in single-node mode: a topic is created, with its partition
logs, before the response is sent. In cluster mode the request waits up to ``timeout_ms`` for
the controller to make the leaders (``franz.broker.cluster_topics``), as Kafka does, and
answers REQUEST_TIMED_OUT past it; the replication factor may then be up to the number of
registered brokers, with Kafka's assignment.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Any, Final

from franz.broker.authz import authorize, authorize_cluster, filter_authorized
from franz.broker.configs import describe_topic_configs
from franz.broker.context import HandlerResult, RequestContext, request_timeout_ms
from franz.broker.topic_manager import TopicManager
from franz.errors import (
    ErrorCode,
    InvalidConfigurationError,
    InvalidReplicaAssignmentError,
    error_code_for,
)
from franz.metadata.store import TopicRecord
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

log = logging.getLogger(__name__)

ZERO_UUID: Final = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    topics = ctx.services.topic_manager
    validate_only = bool(getattr(request, "validate_only", False))
    counts = Counter(topic.name for topic in request.topics)
    results: list[dict[str, Any]] = []
    created: dict[str, int] = {}
    # ACLs (KafkaApis.handleCreateTopicsRequest): CREATE on the cluster, or on each topic.
    may_create = (
        set(counts)
        if authorize_cluster(ctx, AclOperation.CREATE)
        else filter_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, counts)
    )
    for topic in request.topics:
        if counts[topic.name] == 1 and topic.name not in may_create:
            results.append(
                _error(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            )
            continue
        if counts[topic.name] > 1:
            results.append(
                _error(
                    topic.name, ErrorCode.INVALID_REQUEST, "Found multiple entries for this topic."
                )
            )
            continue
        try:
            record = await _create(topics, topic, validate_only)
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("unexpected error creating topic %s", topic.name)
            else:
                log.info("topic %s not created: %s", topic.name, exc)
            results.append(_error(topic.name, code, str(exc) or None))
            continue
        if not validate_only:
            created[record.name] = record.partition_count
        # Kafka: the configs (v5+) only with DESCRIBE_CONFIGS on the topic, else an error.
        configs_allowed = authorize(
            ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, record.name
        )
        results.append(
            {
                "name": record.name,
                "topic_id": ZERO_UUID if validate_only else record.topic_id,
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "num_partitions": record.partition_count,
                "replication_factor": len(record.assignment[0]),
                "topic_config_error_code": (
                    ErrorCode.NONE if configs_allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                ),
                "configs": [
                    entry.to_create_topics()
                    for entry in describe_topic_configs(ctx.services.config, record.configs)
                ]
                if configs_allowed
                else [],
            }
        )
    # Cluster mode: one wait for the controller to make every new topic's leaders.
    late = await topics.wait_for_leaders(created, request_timeout_ms(request)) if created else set()
    for result in results:
        if result["name"] in late:
            result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            result["error_message"] = None
    return {"throttle_time": 0, "topics": results}


async def _create(topics: TopicManager, topic: Any, validate_only: bool) -> TopicRecord:
    null_configs = [c.name for c in topic.configs if c.value is None]
    if null_configs:
        raise InvalidConfigurationError(
            f"Null value not supported for topic configs: {','.join(null_configs)}"
        )
    assignment: dict[int, list[int]] = {}
    for entry in topic.assignments:
        if entry.partition_index in assignment:
            raise InvalidReplicaAssignmentError(
                f"Found multiple manual partition assignments for partition {entry.partition_index}"
            )
        assignment[entry.partition_index] = list(entry.broker_ids)
    return await topics.create_topic_async(
        topic.name,
        topic.num_partitions,
        topic.replication_factor,
        {c.name: c.value for c in topic.configs},
        assignment or None,
        validate_only=validate_only,
        timeout_ms=None,
    )


def _error(name: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": ZERO_UUID,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }
