"""CreatePartitions (37), v0-3: raise a topic's partition count to ``count``, or with
``validate_only`` just check that it could be.

Kafka 3.9 semantics (``ZkAdminManager.createPartitions``):

* Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
* ``count`` not above the current count: INVALID_PARTITIONS ("Topic currently has 3
  partitions, which is higher than the requested 2." / "Topic already has 3 partitions.").
* ``assignments`` (null: automatic): one replica list per new partition, each naming only
  live brokers (this one) once, else INVALID_REPLICA_ASSIGNMENT.
* A topic named twice in one request: one INVALID_REQUEST result for it ("Duplicate topic
  in request."), nothing changed, as in ``KafkaApis.handleCreatePartitionsRequest`` (whose
  results are keyed by topic: librdkafka refuses a response naming a topic twice).

New partitions get their logs before the response is sent; ``timeout_ms`` plays no part.
Every requested topic gets a result (an emulator once answered with an empty list).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext, request_timeout_ms
from franz.errors import ErrorCode, error_code_for
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    topics = ctx.services.topic_manager
    validate_only = bool(getattr(request, "validate_only", False))
    counts = Counter(topic.name for topic in request.topics)
    results: list[dict[str, Any]] = []
    answered: set[str] = set()
    for topic in request.topics:
        name = topic.name
        if counts[name] > 1:
            if name not in answered:
                answered.add(name)
                results.append(
                    _result(name, ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
                )
            continue
        if not authorize(ctx, AclOperation.ALTER, ResourceType.TOPIC, name):
            # KafkaApis.handleCreatePartitionsRequest: ALTER on the topic.
            results.append(
                _result(
                    name,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The topic authorization is failed.",
                )
            )
            continue
        assignments = getattr(topic, "assignments", None)
        assignment = None if assignments is None else [list(a.broker_ids) for a in assignments]
        try:
            await topics.create_partitions_async(
                name,
                topic.count,
                assignment,
                validate_only=validate_only,
                timeout_ms=request_timeout_ms(request),
            )
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("unexpected error adding partitions to %s", name)
            else:
                log.info("partitions of %s not changed: %s", name, exc)
            results.append(_result(name, code, str(exc) or None))
            continue
        results.append(_result(name, ErrorCode.NONE, None))
    return {"throttle_time": 0, "results": results}


def _result(name: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message}
