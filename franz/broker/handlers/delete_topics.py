"""DeleteTopics (20), v1-6: delete topics by name (``topic_names`` before v6) or, from v6,
by name or by topic id (``topics``).

Kafka 3.9 semantics (``KafkaApis.handleDeleteTopicsRequest``, KRaft ``ControllerApis``):

* ``delete.topic.enable=false`` refuses the whole request: every entry gets
  TOPIC_DELETION_DISABLED (v3+; before v3, which lacks that code, INVALID_REQUEST as KRaft
  sends), known topic or not, and nothing is deleted.
* An unknown name: UNKNOWN_TOPIC_OR_PARTITION; an unknown id: UNKNOWN_TOPIC_ID. An entry
  with both a name and an id: INVALID_REQUEST ("Topic name and topic ID can not both be
  specified."; Kafka refuses the whole request, Franz that entry only).
* A name or an id given twice: one INVALID_REQUEST result for it ("Duplicate topic name." /
  "Duplicate topic id.", KRaft's answers), and that topic is not deleted. Results are one
  per distinct name or id, as Kafka's (librdkafka refuses a topic named twice).
* v6 results carry the topic id (also for topics named by name) and, v5+, a message.

Deletion is complete when the response is sent: the topic leaves the metadata store, then
its partitions and their log directories go (``TopicManager.delete_topic``). ``timeout_ms``
plays no part in single-node mode; in cluster mode the topic is marked for deletion in
ZooKeeper and the request waits up to ``timeout_ms`` for the controller to delete it
(REQUEST_TIMED_OUT past it), as Kafka's ``DelayedDeleteTopics``.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Any, Final

from franz.broker.authz import authorize
from franz.broker.context import HandlerResult, RequestContext, request_timeout_ms
from franz.errors import ErrorCode, error_code_for
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]

log = logging.getLogger(__name__)

ZERO_UUID: Final = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    topics = ctx.services.topic_manager
    entries: list[tuple[str | None, uuid.UUID]] = []
    if ctx.api_version >= 6:
        for entry in request.topics:
            topic_id = entry.topic_id if entry.topic_id is not None else ZERO_UUID
            entries.append((entry.name, topic_id))
    else:
        entries = [(name, ZERO_UUID) for name in request.topic_names]
    if not ctx.services.config.get("delete.topic.enable"):
        ctx.refused("DeleteTopics", "delete.topic.enable is false")
        code = (
            ErrorCode.TOPIC_DELETION_DISABLED if ctx.api_version >= 3 else ErrorCode.INVALID_REQUEST
        )
        return {
            "throttle_time": 0,
            "responses": [
                _result(name, topic_id, code, "Topic deletion is disabled.")
                for name, topic_id in dict.fromkeys(entries)
            ],
        }
    names = Counter(name for name, topic_id in entries if topic_id == ZERO_UUID)
    ids = Counter(topic_id for _, topic_id in entries if topic_id != ZERO_UUID)
    responses: list[dict[str, Any]] = []
    answered: set[object] = set()
    for name, topic_id in entries:
        by_id = topic_id != ZERO_UUID
        if (topic_id if by_id else name) in answered:
            continue
        answered.add(topic_id if by_id else name)
        if by_id and name is not None:
            responses.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "Topic name and topic ID can not both be specified.",
                )
            )
            continue
        if by_id and ids[topic_id] > 1:
            responses.append(
                _result(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
            )
            continue
        if not by_id and names[name] > 1:
            responses.append(
                _result(name, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            )
            continue
        record = topics.by_id(topic_id) if by_id else topics.get(name) if name else None
        # ACLs (KafkaApis.handleDeleteTopicsRequest): DELETE on the topic; by id, an unknown
        # id is UNKNOWN_TOPIC_ID first and a refused one keeps its name hidden.
        denied = (record is not None or not by_id) and not authorize(
            ctx, AclOperation.DELETE, ResourceType.TOPIC, record.name if record else name or ""
        )
        if denied:
            hidden = None if by_id else name
            responses.append(_result(hidden, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None))
            continue
        if record is None:
            code = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            responses.append(_result(name, topic_id, code, None))
            continue
        try:
            await topics.delete_topic_async(record.name, timeout_ms=request_timeout_ms(request))
            ctx.services.on_topic_deleted(record.name)
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("unexpected error deleting topic %s", record.name)
            responses.append(_result(record.name, record.topic_id, code, str(exc) or None))
            continue
        responses.append(_result(record.name, record.topic_id, ErrorCode.NONE, None))
    return {"throttle_time": 0, "responses": responses}


def _result(
    name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None
) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
