"""DescribeConfigs (32), v1-4: the configs of topics and brokers, with their sources,
synonyms (``include_synonyms``), types (v3+) and documentation (``include_documentation``,
v3+). What each entry holds is ``franz.broker.configs``'s business; this module resolves
resources (Kafka 3.9's ``ConfigHelper.describeConfigs``):

* TOPIC (2): every topic config (``configuration_keys`` null or empty: all; else those
  named), effective values included. An invalid name: INVALID_TOPIC_EXCEPTION; an unknown
  topic: UNKNOWN_TOPIC_OR_PARTITION.
* BROKER (4): the name is this broker's id (every broker config, effective values, the
  dynamic ones not read-only) or ``""``, the cluster-wide *dynamic* defaults (only those
  set: an empty list when none are, as Kafka answers). Another id: INVALID_REQUEST
  ("Unexpected broker id, expected 0 or empty string, but received 5"); a non-integer
  name: INVALID_REQUEST ("Broker id must be an integer, but it is: x").
* BROKER_LOGGER (8): Kafka lists its log4j loggers; Franz has no runtime-adjustable loggers
  and answers an empty list for its own broker id (the id is checked as Kafka checks it:
  ``""`` and other ids are INVALID_REQUEST), so tools that list loggers show none rather
  than fail.
* Anything else: INVALID_REQUEST ("Unsupported resource type: GROUP").

A failed resource carries its error code, a message and no configs; the others still
succeed.
"""

from __future__ import annotations

import logging
from typing import Any

from franz.broker.authz import config_resource_denied
from franz.broker.configs import (
    ConfigEntry,
    ResourceType,
    broker_resource_id,
    describe_broker_configs,
    describe_default_broker_configs,
    describe_topic_configs,
    resource_type_name,
)
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.topic_manager import validate_topic_name
from franz.errors import (
    ErrorCode,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from franz.security.acl import AclOperation

__all__ = ["handle"]

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    include_documentation = bool(getattr(request, "include_documentation", False))
    results: list[dict[str, Any]] = []
    for resource in request.resources:
        result: dict[str, Any] = {
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "error_code": ErrorCode.NONE,
            "error_message": "",  # Kafka's default, on success too
            "configs": [],
        }
        denied = config_resource_denied(
            ctx, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name
        )
        if denied is not None:
            result["error_code"], result["error_message"] = denied, denied.message
            results.append(result)
            continue
        try:
            entries = _describe(ctx, resource)
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("unexpected error describing the configs of %s", resource)
            result["error_code"] = code
            result["error_message"] = str(exc)
        else:
            result["configs"] = [
                entry.to_describe_configs(
                    include_synonyms=include_synonyms,
                    include_documentation=include_documentation,
                )
                for entry in entries
            ]
        results.append(result)
    return {"throttle_time": 0, "results": results}


def _describe(ctx: RequestContext, resource: Any) -> list[ConfigEntry]:
    services = ctx.services
    keys = resource.configuration_keys
    name = resource.resource_name
    kind = resource.resource_type
    if kind == ResourceType.TOPIC:
        validate_topic_name(name)
        cache = services.metadata_cache
        if not cache.contains(name):
            # Kafka's ConfigHelper answers an unknown topic with the code and no message.
            raise UnknownTopicOrPartitionError("")
        return describe_topic_configs(services.config, cache.topic_configs(name), keys)
    if kind == ResourceType.BROKER:
        if broker_resource_id(name, services.broker_id) is None:
            return describe_default_broker_configs(services.config, keys)
        return describe_broker_configs(services.config, keys)
    if kind == ResourceType.BROKER_LOGGER:
        if not name:
            raise InvalidRequestError("Broker id must not be empty")
        broker_resource_id(name, services.broker_id)
        return []
    raise InvalidRequestError(f"Unsupported resource type: {resource_type_name(kind)}")
