"""UpdateMetadata (6), v0-8 (Kafka 3.9's ``KafkaApis.handleUpdateMetadataRequest``
and ``ReplicaManager.maybeUpdateMetadataCache``): the controller's view of live brokers and
partition states, into the metadata cache every handler reads.

Served in cluster mode only (the embedded mode's controller delivers its UpdateMetadata in
process to the same ``franz.broker.control_requests.apply_update_metadata``); v0-7 are read
as v8 (``franz.controller.old_versions``: v0-2 name
each endpoint's listener after its security protocol). Refusals as
``franz.broker.controller_fencing`` (the response has only the top-level error code).
Partitions sent with leader -2 (``LeaderDuringDelete``) are removed from the cache; a topic
whose last partition went is forgotten by the topic manager and its groups' offsets are dropped
(Kafka's ``groupCoordinator.onPartitionsDeleted``).
"""

from __future__ import annotations

import logging
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.control_requests import apply_update_metadata
from franz.broker.controller_fencing import controller_request_error, to_value
from franz.controller.requests import UpdateMetadataRequest
from franz.errors import ErrorCode

__all__ = ["handle"]

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    value = to_value(ctx, request)
    if value is None:
        return {"error_code": ErrorCode.UNSUPPORTED_VERSION}
    assert isinstance(value, UpdateMetadataRequest)
    error = controller_request_error(ctx, value)
    if error != ErrorCode.NONE:
        return {"error_code": error}
    services = ctx.services
    # Topics this broker hosts no replica of are known to it through UpdateMetadata only.
    await services.topic_manager.refresh_topics(
        {
            t.topic_name: [p.partition_index for p in t.partition_states if p.leader != -2]
            for t in value.topic_states
        }
    )
    apply_update_metadata(services, value)
    return {"error_code": ErrorCode.NONE}
