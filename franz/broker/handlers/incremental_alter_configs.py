"""IncrementalAlterConfigs (44), v0-1: change configs one operation at a time (KIP-339);
``validate_only`` checks without changing anything.

Operations (``AlterConfigOp.OpType``): SET=0 (set the override), DELETE=1 (drop the override:
back to the default; dropping one that is not set is a no-op), APPEND=2 and SUBTRACT=3 (add
values to / remove values from a LIST config: ``cleanup.policy``, the throttled-replica
lists). APPEND and SUBTRACT start from the config's *effective* value (the override, else the
broker-level default that DescribeConfigs shows), APPEND skips values already present, and
both are INVALID_CONFIG on a config that is not a LIST ("Can't APPEND to key segment.bytes
because its type is not LIST.", KRaft's answer; KRaft starts from the built-in default
instead, which would turn a broker-wide ``log.cleanup.policy=compact`` into ``delete`` on an
APPEND of ``delete``).

Per resource (Kafka 3.9; KRaft ``ConfigurationControlManager.incrementalAlterConfigs`` and
the broker's ``ConfigAdminManager.preprocess``):

* A config name twice in one resource: INVALID_REQUEST ("Error due to duplicate config
  keys", Kafka's broker-side text, without the keys); a null value for any operation but
  DELETE: INVALID_REQUEST ("Null value not supported for : SET:k"); an unknown operation:
  INVALID_REQUEST. A resource named twice in
  one request: INVALID_REQUEST on each entry.
* TOPIC (2): unknown topic: UNKNOWN_TOPIC_OR_PARTITION; unknown config name, bad value
  (such as a ``compression.type`` outside Kafka's list): INVALID_CONFIG. The resulting
  override set is validated as a whole, persisted and applied to the live logs
  (``TopicManager.set_topic_configs``); either every operation of a resource applies or none
  does.
* BROKER (4): the operations change the dynamic configs of this broker (name its id) or of
  the cluster-wide default (name ``""``), starting from those stored for that entity; the
  resulting set is checked and applied as AlterConfigs' (``DynamicBrokerConfig.alter``): a
  name Kafka cannot change at runtime is INVALID_REQUEST ("Cannot update these configs
  dynamically: Set(...)"). DELETE of a config the entity does not set is a no-op (so
  DELETE of a static-only name succeeds, as in Kafka, which validates the resulting set).
  APPEND and SUBTRACT need a LIST key (else INVALID_CONFIG, "Config value append is not
  allowed for config key: k") and start from the entity's value, else the effective one.
  In cluster mode the entity's configs are read from ``/config/brokers/<entity>`` first
  (``DynamicBrokerConfig.alter_stored``).
* BROKER_LOGGER (8): Franz has no runtime-adjustable loggers (DescribeConfigs lists none):
  SET and DELETE answer INVALID_REQUEST "Logger <name> does not exist!", APPEND and SUBTRACT
  INVALID_REQUEST, as Kafka answers for those.
* Anything else: INVALID_REQUEST.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from franz.broker.configs import (
    ResourceType,
    broker_resource_id,
    kafka_broker_default,
    resource_repr,
    resource_type_name,
)
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers.alter_configs import alter_each_resource, answer_when_written
from franz.broker.topic_manager import TopicManager
from franz.config.broker import BROKER_CONFIG_KEYS
from franz.config.defs import ConfigType
from franz.config.topic import TOPIC_CONFIG_KEYS
from franz.errors import (
    InvalidConfigurationError,
    InvalidRequestError,
    UnknownTopicOrPartitionError,
)

__all__ = ["OpType", "apply_broker_operations", "apply_operations", "handle"]


class OpType(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType`` ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    return answer_when_written(ctx, alter_each_resource(ctx, request, _alter))


def _operations(resource: Any) -> list[tuple[str, OpType, str | None]]:
    """The resource's operations, checked as Kafka's ``ConfigAdminManager.preprocess`` does."""
    counts = Counter(c.name for c in resource.configs)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise InvalidRequestError("Error due to duplicate config keys")
    operations = []
    for config in resource.configs:
        try:
            op = OpType(config.config_operation)
        except ValueError:
            raise InvalidRequestError(
                f"Unknown alter config operation type {config.config_operation} for {config.name}"
            ) from None
        operations.append((config.name, op, config.value))
    nulls = [
        f"{op.name}:{name}"
        for name, op, value in operations
        if value is None and op != OpType.DELETE
    ]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    return operations


def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> Awaitable[None] | None:
    services = ctx.services
    kind = resource.resource_type
    name = resource.resource_name
    operations = _operations(resource)
    if kind == ResourceType.TOPIC:
        topics = services.topic_manager
        record = topics.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        overrides = apply_operations(topics, name, record.configs, operations)
        topics.set_topic_configs(name, overrides, validate_only=validate_only)
        return None
    if kind == ResourceType.BROKER:
        dynamic = services.dynamic_config
        effective = services.config

        def default_of(key: str) -> Any:
            return effective.get(key) if effective.is_set(key) else kafka_broker_default(key)

        def change(current: dict[str, str]) -> dict[str, str]:
            return apply_broker_operations(current, default_of, operations)

        if dynamic.remote is not None:
            # Cluster mode: start from the znode, as Kafka's ZkAdminManager does, not from
            # this broker's copy, which may not have seen another broker's change yet.
            return dynamic.alter_stored(name, change, validate_only=validate_only)
        configs = change(dynamic.entity_configs(name))
        return dynamic.alter(name, configs, validate_only=validate_only)
    if kind == ResourceType.BROKER_LOGGER:
        broker_resource_id(name, services.broker_id)
        for config, op, _ in operations:
            if op in (OpType.APPEND, OpType.SUBTRACT):
                raise InvalidRequestError(
                    f"{op.name} operation is not allowed for the BROKER_LOGGER resource"
                )
            raise InvalidRequestError(
                f"Invalid config value for resource {resource_repr(kind, name)}: Logger {config} "
                "does not exist! (Franz has no runtime-adjustable loggers)"
            )
        return None
    raise InvalidRequestError(
        "IncrementalAlterConfigs is only supported for topics and brokers, but resource type "
        f"is {resource_type_name(kind)}"
    )


def apply_operations(
    topics: TopicManager,
    topic: str,
    overrides: dict[str, str],
    operations: list[tuple[str, OpType, str | None]],
) -> dict[str, str]:
    """The topic's override set after ``operations`` (not yet validated as a whole)."""
    result = dict(overrides)
    effective: dict[str, str] | None = None
    for name, op, value in operations:
        if op == OpType.SET:
            assert value is not None
            result[name] = value
        elif op == OpType.DELETE:
            result.pop(name, None)
        else:
            key = TOPIC_CONFIG_KEYS.get(name)
            if key is None:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
            if key.type is not ConfigType.LIST:
                raise InvalidConfigurationError(
                    f"Can't {op.name} to key {name} because its type is not LIST."
                )
            if name in result:
                current = _split(result[name])
            else:
                if effective is None:
                    effective = topics.log_config(topic).to_properties()
                current = _split(effective[name])
            assert value is not None
            values = _split(value)
            if op == OpType.APPEND:
                for item in values:
                    if item not in current:
                        current.append(item)
            else:
                current = [v for v in current if v not in values]
            result[name] = ",".join(current)
    return result


def apply_broker_operations(
    current: dict[str, str],
    effective: Callable[[str], Any],
    operations: list[tuple[str, OpType, str | None]],
) -> dict[str, str]:
    """A broker entity's dynamic configs after ``operations`` (validated by the caller)."""
    result = dict(current)
    for name, op, value in operations:
        if op == OpType.SET:
            assert value is not None
            result[name] = value
        elif op == OpType.DELETE:
            result.pop(name, None)
        else:
            key = BROKER_CONFIG_KEYS.get(name)
            if key is None or key.type is not ConfigType.LIST:
                raise InvalidConfigurationError(
                    f"Config value append is not allowed for config key: {name}"
                    if op == OpType.APPEND
                    else f"Config value subtract is not allowed for config key: {name}"
                )
            items = _split(result[name]) if name in result else list(effective(name) or [])
            assert value is not None
            values = _split(value)
            if op == OpType.APPEND:
                items += [item for item in values if item not in items]
            else:
                items = [item for item in items if item not in values]
            result[name] = ",".join(items)
    return result


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]
