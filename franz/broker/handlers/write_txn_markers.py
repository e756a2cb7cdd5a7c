"""WriteTxnMarkers (27): a transaction coordinator has this broker end a transaction in the
partitions it leads (KIP-98; inter-broker, Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``).

Each marker (producer id and epoch, COMMIT or ABORT, coordinator epoch, partitions) goes
through ``franz.broker.txn_markers.write_txn_markers_locally``: a control batch per
partition appended as leader with acks=all, the per-partition errors as Kafka answers them.
The markers of one request are written in request order, their ISR waits run together, and
the response is sent once every marker is done. Errors are grouped by producer id, as
Kafka's response (a map from producer id to partition errors: two markers of one producer
answer as one entry).

v1 is flexible (KIP-482) and what Kafka 3.9's coordinators send; v0 (same fields) is decoded
and encoded by hand (``franz.protocol.legacy_versions``: kio has no class for it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RawBody, RequestContext
from franz.broker.txn_markers import write_txn_markers_locally
from franz.errors import ErrorCode
from franz.protocol.legacy_versions import encode_write_txn_markers_v0_response
from franz.security.acl import AclOperation
from franz.storage.files import TopicPartition

__all__ = ["handle"]


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        # KafkaApis.handleWriteTxnMarkersRequest: every partition refused.
        denied = dict.fromkeys(
            (
                TopicPartition(t.name, i)
                for m in request.markers
                for t in m.topics
                for i in t.partition_indexes
            ),
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        )
        return _answer(ctx, {m.producer_id: denied for m in request.markers})
    writes = [
        write_txn_markers_locally(
            services,
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            bool(marker.transaction_result),
            [
                TopicPartition(topic.name, index)
                for topic in marker.topics
                for index in topic.partition_indexes
            ],
        )
        for marker in request.markers
    ]
    # gather starts every coroutine in this order before any waits: appends stay in order.
    outcomes = await asyncio.gather(*writes)
    by_producer: dict[int, dict[TopicPartition, ErrorCode]] = {}
    for marker, errors in zip(request.markers, outcomes, strict=True):
        by_producer.setdefault(marker.producer_id, {}).update(errors)
    return _answer(ctx, by_producer)


def _answer(
    ctx: RequestContext, by_producer: dict[int, dict[TopicPartition, ErrorCode]]
) -> HandlerResult:
    markers = [
        {"producer_id": producer_id, "topics": _topics(errors)}
        for producer_id, errors in by_producer.items()
    ]
    if ctx.api_version == 0:
        return RawBody([encode_write_txn_markers_v0_response(markers)])
    return {"markers": markers}


def _topics(errors: dict[TopicPartition, ErrorCode]) -> list[dict[str, Any]]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, code in errors.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": code}
        )
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]
