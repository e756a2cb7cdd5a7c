"""AlterConfigs (33), v0-2: the legacy, non-incremental config change. For a topic, the
configs in the request *replace* its whole override set (a config left out goes back to its
default); ``validate_only`` checks without changing anything.

Per resource (Kafka 3.9, ``ZkAdminManager.alterConfigs`` / KRaft
``ConfigurationControlManager.legacyAlterConfigs``):

* TOPIC (2): unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A null value: INVALID_REQUEST
  ("Null value not supported for : k"). Unknown config names and bad values (such as a
  ``compression.type`` outside Kafka's list): INVALID_CONFIG with the reason, as KRaft
  answers (ZooKeeper-mode Kafka wraps value errors in INVALID_REQUEST). Accepted changes
  are persisted in the metadata store (they survive a restart) and applied to the topic's
  live logs at once (``TopicManager.set_topic_configs``).
  A config name given twice: the last value wins (Kafka builds a ``Properties``).
* BROKER (4): the configs replace the dynamic configs of this broker (name its id) or of
  the cluster-wide default (name ``""``); an empty list removes them all. Names that are
  not dynamic in Kafka, bad values: INVALID_REQUEST, as ZooKeeper-mode Kafka answers
  ("Cannot update these configs dynamically: Set(...)";
  ``franz.broker.dynamic_config.DynamicBrokerConfig.alter``). A null value: INVALID_REQUEST.
  In cluster mode the change goes to ``/config/brokers/<id|<default>>`` and every broker
  applies it from the change notification; a broker id other than the receiving broker's
  is INVALID_REQUEST, as in Kafka's ZooKeeper mode (admin clients send it to that broker).
* Anything else: INVALID_REQUEST ("AlterConfigs is only supported for topics and brokers,
  but resource type is BROKER_LOGGER").
* A resource named twice in one request: INVALID_REQUEST ("Each resource must appear at
  most once.") on each entry, nothing applied for it (KRaft's ``ConfigAdminManager``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from franz.broker.authz import config_resource_denied
from franz.broker.configs import ResourceType, resource_type_name
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import (
    ErrorCode,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from franz.security.acl import AclOperation

__all__ = ["DUPLICATE_RESOURCE_MESSAGE", "handle", "resource_error", "resource_response"]

log = logging.getLogger(__name__)

DUPLICATE_RESOURCE_MESSAGE = "Each resource must appear at most once."


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    return answer_when_written(ctx, alter_each_resource(ctx, request, _alter))


def answer_when_written(
    ctx: RequestContext, result: HandlerResult | Awaitable[HandlerResult]
) -> HandlerResult | Awaitable[HandlerResult]:
    """Cluster mode: answer once the topic config changes are in ZooKeeper (Kafka's
    ``AdminZkClient.changeTopicConfig`` writes before the response); at once otherwise.
    ``result`` may itself wait for broker config writes (``alter_each_resource``)."""
    pending = ctx.services.topic_manager.pending_writes()
    if not pending:
        return result

    async def written() -> HandlerResult:
        await asyncio.gather(*pending, return_exceptions=True)
        return await result if inspect.isawaitable(result) else result

    return written()


def alter_each_resource(
    ctx: RequestContext,
    request: Any,
    alter: Callable[[RequestContext, Any, bool], Awaitable[None] | None],
) -> HandlerResult | Awaitable[HandlerResult]:
    """Apply ``alter`` to each resource of an (Incremental)AlterConfigs request: a resource
    named twice gets INVALID_REQUEST and is left alone, failures become per-resource codes.
    ``alter`` may return a write still in flight (cluster mode's broker configs): the answer
    then waits for it, and a failed write is that resource's error."""
    validate_only = bool(request.validate_only)
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses: list[dict[str, Any]] = []
    writes: list[tuple[int, Any, Awaitable[None]]] = []
    for resource in request.resources:
        if seen[(resource.resource_type, resource.resource_name)] > 1:
            responses.append(
                resource_response(resource, ErrorCode.INVALID_REQUEST, DUPLICATE_RESOURCE_MESSAGE)
            )
            continue
        denied = config_resource_denied(
            ctx, AclOperation.ALTER_CONFIGS, resource.resource_type, resource.resource_name
        )
        if denied is not None:
            responses.append(resource_response(resource, denied, None))
            continue
        try:
            write = alter(ctx, resource, validate_only)
        except Exception as exc:
            code, message = resource_error(exc, resource)
            responses.append(resource_response(resource, code, message))
            continue
        if write is not None:
            writes.append((len(responses), resource, write))
        responses.append(resource_response(resource, ErrorCode.NONE, None))
    body: HandlerResult = {"throttle_time": 0, "responses": responses}
    if not writes:
        return body

    async def written() -> HandlerResult:
        for index, resource, write in writes:
            try:
                await write
            except Exception as exc:
                code, message = resource_error(exc, resource)
                responses[index] = resource_response(resource, code, message)
        return body

    return written()


def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> Awaitable[None] | None:
    services = ctx.services
    kind = resource.resource_type
    name = resource.resource_name
    if kind in (ResourceType.TOPIC, ResourceType.BROKER):
        nulls = [c.name for c in resource.configs if c.value is None]
        if nulls:
            raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    if kind == ResourceType.TOPIC:
        if services.topic_manager.get(name) is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        configs = {c.name: c.value for c in resource.configs}
        services.topic_manager.set_topic_configs(name, configs, validate_only=validate_only)
        return None
    if kind == ResourceType.BROKER:
        configs = {c.name: c.value for c in resource.configs}
        return services.dynamic_config.alter(name, configs, validate_only=validate_only)
    raise InvalidRequestError(
        "AlterConfigs is only supported for topics and brokers, but resource type is "
        f"{resource_type_name(kind)}"
    )


def resource_error(exc: Exception, resource: Any) -> tuple[ErrorCode, str | None]:
    """The error code and message of a failed resource (shared with IncrementalAlterConfigs)."""
    code = error_code_for(exc)
    if code == ErrorCode.UNKNOWN_SERVER_ERROR:
        log.exception(
            "unexpected error altering the configs of %s %s",
            resource_type_name(resource.resource_type),
            resource.resource_name,
        )
    else:
        log.info(
            "configs of %s %s not changed: %s",
            resource_type_name(resource.resource_type),
            resource.resource_name,
            exc,
        )
    message = str(exc) or None
    if code == ErrorCode.INVALID_CONFIG and message and message.startswith("Invalid value "):
        # A value that does not parse (Kafka's ConfigException), prefixed as Kafka's
        # ConfigAdminManager does.
        kind = resource_type_name(resource.resource_type).upper()
        message = (
            f"Invalid config value for resource ConfigResource(type={kind}, "
            f"name='{resource.resource_name}'): {message}"
        )
    return code, message


def resource_response(resource: Any, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "resource_type": resource.resource_type,
        "resource_name": resource.resource_name,
        "error_code": code,
        "error_message": message,
    }
