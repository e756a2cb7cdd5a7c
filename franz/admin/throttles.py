"""Replication throttle configs as ``kafka-reassign-partitions.sh`` sets and clears them, through
librdkafka's IncrementalAlterConfigs (KIP-339).

Set (``--execute --throttle`` / ``--replica-alter-log-dirs-throttle``, Kafka's
``modifyTopicThrottles``, ``modifyInterBrokerThrottle``, ``modifyLogDirThrottle``): the topics'
``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``
(``partition:broker,...``, computed by ``franz.admin.reassignment``), then per broker
``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate`` (bytes/s),
or ``replica.alter.log.dirs.io.max.bytes.per.second``.

Cleared (``--verify`` once nothing is moving, ``--cancel``; Kafka's ``clearAllThrottles``):
the three broker keys on every broker and the two topic keys on every topic of the plan,
deleted (a key that is not set deletes without error).

librdkafka sends at most one BROKER resource per request (each goes to its own broker), so
brokers get one request each; all topics go in one. A failure is a ``ToolError`` with the
broker's error as Kafka's admin client shows it (``java_error_text``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType

from franz.admin.client import java_error_text, wait
from franz.admin.options import ToolError
from franz.admin.reassignment import (
    BROKER_THROTTLES,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
    TOPIC_THROTTLES,
)

__all__ = [
    "clear_broker_throttles",
    "clear_topic_throttles",
    "set_broker_rates",
    "set_topic_throttles",
]


def _alter(admin: Any, args: argparse.Namespace, resources: list[ConfigResource]) -> None:
    if not resources:
        return
    futures = admin.incremental_alter_configs(resources, request_timeout=args.timeout_ms / 1000)
    for resource, future in futures.items():
        try:
            wait(future, args)
        except KafkaException as exc:
            raise ToolError(
                f"changing the configs of {resource.restype.name.lower()} {resource.name} "
                f"failed: {java_error_text(exc)}"
            ) from None


def _ops(values: Mapping[str, str | None]) -> list[ConfigEntry]:
    return [
        ConfigEntry(
            key,
            value,
            incremental_operation=(
                AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
            ),
        )
        for key, value in values.items()
    ]


def set_topic_throttles(
    admin: Any, args: argparse.Namespace, leader: Mapping[str, str], follower: Mapping[str, str]
) -> None:
    """Kafka's ``modifyTopicThrottles``: both lists of each topic, in one request."""
    resources = []
    for topic in {**leader, **follower}:
        values: dict[str, str | None] = {}
        if topic in leader:
            values[LEADER_REPLICAS] = leader[topic]
        if topic in follower:
            values[FOLLOWER_REPLICAS] = follower[topic]
        resources.append(
            ConfigResource(ResourceType.TOPIC, topic, incremental_configs=_ops(values))
        )
    _alter(admin, args, resources)


def set_broker_rates(
    admin: Any, args: argparse.Namespace, brokers: Iterable[int], rate: int, *, log_dirs: bool
) -> None:
    """The inter-broker rates (or, with ``log_dirs``, the log-dir move rate) of ``brokers``."""
    keys = (LOG_DIR_RATE,) if log_dirs else (LEADER_RATE, FOLLOWER_RATE)
    for broker in brokers:
        values: dict[str, str | None] = {key: str(rate) for key in keys}
        _alter(
            admin,
            args,
            [ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=_ops(values))],
        )


def clear_broker_throttles(admin: Any, args: argparse.Namespace, brokers: Iterable[int]) -> None:
    for broker in brokers:
        values: dict[str, str | None] = dict.fromkeys(BROKER_THROTTLES)
        _alter(
            admin,
            args,
            [ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=_ops(values))],
        )


def clear_topic_throttles(admin: Any, args: argparse.Namespace, topics: Iterable[str]) -> None:
    values: dict[str, str | None] = dict.fromkeys(TOPIC_THROTTLES)
    _alter(
        admin,
        args,
        [
            ConfigResource(ResourceType.TOPIC, topic, incremental_configs=_ops(values))
            for topic in topics
        ],
    )
