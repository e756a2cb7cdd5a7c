"""The broker's metadata cache: what request handlers read about the cluster (Kafka's
``MetadataCache`` / ``ZkMetadataCache``).

Contents: the live brokers (id, endpoints, rack), the controller id, one
``UpdateMetadataPartitionState`` per partition (leader, leader epoch, ISR, zk version,
replicas, offline replicas), topic ids, and each topic's config overrides.

Who fills it:

* Cluster mode (issue 16): the controller's UpdateMetadata requests, through
  ``update_metadata``, exactly as Kafka's ``ZkMetadataCache.updateMetadata``: the live broker
  list and the controller id are replaced wholesale; partition states are merged (only the
  partitions sent change); a partition whose leader is ``LEADER_DURING_DELETE`` (-2) is
  removed, and a topic left with no partition loses its id and configs.
* Embedded single-node mode: the broker's own controller
  (``franz.controller.shell.local.LocalController``) delivers itself the same update
  whenever topics, partitions or log dirs change, so the handlers read one source in both
  modes.

Topic configs are not part of Kafka's UpdateMetadata (ZooKeeper-era brokers learn them from
``/config/changes`` notifications): ``update_topic_configs`` is that path.

Reads never touch ZooKeeper or the disk. Concurrency: owned by the event loop; an update is
applied whole between two requests, so a handler never sees half of one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "INTERNAL_TOPICS",
    "LEADER_DURING_DELETE",
    "NO_LEADER",
    "BrokerEndpoint",
    "MetadataBroker",
    "MetadataCache",
    "Node",
    "UpdateMetadataPartitionState",
    "is_internal_topic",
]

#: Kafka's ``LeaderAndIsr.NoLeader``: the partition has no leader.
NO_LEADER: Final = -1
#: Kafka's ``LeaderAndIsr.LeaderDuringDelete``: UpdateMetadata's "this partition is gone".
LEADER_DURING_DELETE: Final = -2
#: Kafka's internal topics (``Topic.isInternal``).
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


def is_internal_topic(name: str) -> bool:
    return name in INTERNAL_TOPICS


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """One listener of a broker (UpdateMetadata's ``UpdateMetadataEndpoint``)."""

    host: str
    port: int
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class MetadataBroker:
    """A live broker (UpdateMetadata's ``UpdateMetadataBroker``)."""

    id: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str = "PLAINTEXT") -> BrokerEndpoint | None:
        """The endpoint of ``listener`` (Kafka's ``getNode(listenerName)``), or None."""
        for endpoint in self.endpoints:
            if endpoint.listener == listener:
                return endpoint
        return None


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as clients see it on one listener (Kafka's ``Node``)."""

    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class UpdateMetadataPartitionState:
    """Kafka's ``UpdateMetadataPartitionState``: one partition as the controller describes it.

    ``zk_version`` is the version of the partition's ``state`` znode (the partition epoch);
    ``offline_replicas`` are replicas whose log dir failed (v4+).
    """

    topic_name: str
    partition_index: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    zk_version: int = 0
    controller_epoch: int = 0


class MetadataCache:
    """Kafka's ``ZkMetadataCache``: brokers, controller, partition states, topic ids, configs."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._controller_id: int | None = None
        self._alive_brokers: dict[int, MetadataBroker] = {}
        self._partitions: dict[str, dict[int, UpdateMetadataPartitionState]] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}

    # -- updates ----------------------------------------------------------------------------

    def update_metadata(
        self,
        *,
        controller_id: int | None,
        live_brokers: Iterable[MetadataBroker],
        partition_states: Iterable[UpdateMetadataPartitionState],
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> list[tuple[str, int]]:
        """Apply one UpdateMetadata (``ZkMetadataCache.updateMetadata``); return the
        partitions it deleted.

        ``controller_id`` None: no controller is known (UpdateMetadata's -1).
        ``topic_ids``: the ids of the topics in ``partition_states`` (v7+ ``topic_id``).
        """
        self._controller_id = controller_id
        self._alive_brokers = {broker.id: broker for broker in live_brokers}
        for name, topic_id in (topic_ids or {}).items():
            previous = self._topic_ids.get(name)
            if previous is not None and previous != topic_id:
                self._topic_names.pop(previous, None)
            self._topic_ids[name] = topic_id
            self._topic_names[topic_id] = name
        deleted: list[tuple[str, int]] = []
        for state in partition_states:
            topic = state.topic_name
            if state.leader == LEADER_DURING_DELETE:
                partitions = self._partitions.get(topic, {})
                if state.partition_index in partitions:
                    del partitions[state.partition_index]
                    deleted.append((topic, state.partition_index))
                if not partitions:
                    self._forget_topic(topic)
            else:
                self._partitions.setdefault(topic, {})[state.partition_index] = state
        return deleted

    def _forget_topic(self, topic: str) -> None:
        self._partitions.pop(topic, None)
        self._topic_configs.pop(topic, None)
        topic_id = self._topic_ids.pop(topic, None)
        if topic_id is not None:
            self._topic_names.pop(topic_id, None)

    def update_topic_configs(self, topic: str, overrides: Mapping[str, str]) -> None:
        """A topic's config overrides changed (``/config/topics/<topic>``)."""
        self._topic_configs[topic] = dict(overrides)

    # -- brokers ----------------------------------------------------------------------------

    @property
    def controller_id(self) -> int | None:
        return self._controller_id

    def alive_brokers(self) -> list[MetadataBroker]:
        """Every live broker, by id."""
        return [self._alive_brokers[i] for i in sorted(self._alive_brokers)]

    def alive_broker(self, broker_id: int) -> MetadataBroker | None:
        return self._alive_brokers.get(broker_id)

    def alive_broker_node(self, broker_id: int, listener: str) -> Node | None:
        """The broker on ``listener`` if it is alive (Kafka's ``getAliveBrokerNode``)."""
        broker = self._alive_brokers.get(broker_id)
        endpoint = broker.endpoint(listener) if broker is not None else None
        if broker is None or endpoint is None:
            return None
        return Node(broker.id, endpoint.host, endpoint.port, broker.rack)

    def alive_broker_nodes(self, listener: str) -> list[Node]:
        """Every live broker with an endpoint on ``listener``, by id
        (``getAliveBrokerNodes``)."""
        nodes = (self.alive_broker_node(i, listener) for i in sorted(self._alive_brokers))
        return [node for node in nodes if node is not None]

    def has_alive_broker(self, broker_id: int) -> bool:
        return broker_id in self._alive_brokers

    # -- topics and partitions --------------------------------------------------------------

    def all_topics(self) -> list[str]:
        """Every topic with at least one partition, by name."""
        return sorted(self._partitions)

    def contains(self, topic: str) -> bool:
        return topic in self._partitions

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID | None) -> str | None:
        return self._topic_names.get(topic_id) if topic_id is not None else None

    def topic_configs(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (empty: the broker defaults)."""
        return dict(self._topic_configs.get(topic, {}))

    def num_partitions(self, topic: str) -> int | None:
        partitions = self._partitions.get(topic)
        return len(partitions) if partitions is not None else None

    def partition_info(self, topic: str, partition: int) -> UpdateMetadataPartitionState | None:
        """Kafka's ``getPartitionInfo``."""
        return self._partitions.get(topic, {}).get(partition)

    def partition_states(self, topic: str) -> Sequence[UpdateMetadataPartitionState]:
        """The topic's partitions, by index (empty: unknown topic)."""
        partitions = self._partitions.get(topic, {})
        return [partitions[p] for p in sorted(partitions)]

    def partition_leader(self, topic: str, partition: int) -> MetadataBroker | None:
        """The partition's leader if it is alive (Kafka's ``getPartitionLeaderEndpoint``)."""
        state = self.partition_info(topic, partition)
        if state is None or state.leader < 0:
            return None
        return self._alive_brokers.get(state.leader)
