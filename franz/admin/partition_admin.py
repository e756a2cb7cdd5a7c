"""What ``franz get-offsets``, ``delete-records``, ``leader-election`` and
``reassign-partitions`` share beyond ``franz.admin.client``: cluster metadata (topics,
partitions, replicas, brokers) from one Metadata request, as plain values.

A cluster that does not answer within ``--timeout`` ms is ``client.unreachable``; another
Metadata failure is ``Metadata failed: <librdkafka's text>``. Internal topics
(``ClusterView.topics(include_internal=False)``) are ``client.INTERNAL_TOPICS``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from franz.admin.client import INTERNAL_TOPICS, is_unreachable, kafka_error_text, unreachable
from franz.admin.options import ToolError

__all__ = ["ClusterView", "PartitionView", "read_cluster"]


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterView:
    """Brokers and partitions as one Metadata response showed them."""

    brokers: frozenset[int]
    partitions: dict[str, dict[int, PartitionView]]

    def topics(self, *, include_internal: bool = True) -> list[str]:
        return sorted(t for t in self.partitions if include_internal or t not in INTERNAL_TOPICS)


def read_cluster(admin: AdminClient, args: argparse.Namespace) -> ClusterView:
    """One Metadata request for all topics (never one naming a topic, which a broker with
    ``auto.create.topics.enable`` would answer by creating it) as a ``ClusterView``."""
    try:
        metadata = admin.list_topics(timeout=args.timeout_ms / 1000)
    except KafkaException as exc:
        if is_unreachable(exc):
            raise unreachable(args) from None
        raise ToolError(f"Metadata failed: {kafka_error_text(exc)}") from None
    partitions: dict[str, dict[int, PartitionView]] = {}
    for name, topic in metadata.topics.items():
        if topic.error is not None and topic.error.code() != KafkaError.NO_ERROR:
            continue
        partitions[name] = {
            p.id: PartitionView(name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in topic.partitions.values()
        }
    return ClusterView(frozenset(metadata.brokers), partitions)
