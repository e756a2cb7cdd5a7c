"""``TopicMirrorStore``: the synchronous ``MetadataStore`` a cluster-mode broker reads topics
from, a copy of ZooKeeper's topics kept in memory.

In cluster mode the topics live in ZooKeeper (``franz.metadata.zk_store``), whose calls are
network round trips and so coroutines; the broker's synchronous readers (log configs when a
log opens, the group coordinator's "does this partition exist", AlterConfigs' existence
check) read this mirror instead. It is refreshed from ZooKeeper when the controller tells
the broker about topics it does not know yet (LeaderAndIsr), at startup, and when this broker
creates or changes a topic itself; a topic the controller deleted (UpdateMetadata) is dropped.

Dynamic broker configs: the mirror holds this broker's copy of ``/config/brokers/<default>``
and ``/config/brokers/<id>`` (read at startup and on each ``/config/changes`` notification
naming them, ``franz.broker.dynamic_config``). Producer ids are not the mirror's: cluster mode
claims blocks in ``/latest_producer_id_block`` (``franz.broker.producer_ids``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from franz.errors import UnknownTopicOrPartitionError
from franz.metadata.local import LocalMetadataStore
from franz.metadata.store import MetadataStore, TopicRecord

__all__ = ["TopicMirrorStore"]


class TopicMirrorStore:
    def __init__(self, local: LocalMetadataStore, broker_id: int) -> None:
        self.local = local
        self.broker_id = broker_id
        self.path = local.path
        self._topics: dict[str, TopicRecord] = {}
        self._broker_configs: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        self.local.load()

    def topics(self) -> dict[str, TopicRecord]:
        return dict(self._topics)

    def put(self, record: TopicRecord) -> None:
        """Record a topic as read from ZooKeeper (replacing any older copy)."""
        self._topics[record.name] = record

    def create_topic(self, record: TopicRecord) -> None:
        self._topics[record.name] = record

    def delete_topic(self, name: str) -> None:
        self._topics.pop(name, None)

    def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None:
        record = self._require(name)
        self._topics[name] = dataclasses.replace(
            record, assignment={**record.assignment, **assignment}
        )

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        record = self._require(name)
        self._topics[name] = dataclasses.replace(record, configs=dict(configs))

    def broker_configs(self, entity: str) -> dict[str, str]:
        return dict(self._broker_configs.get(entity, {}))

    def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """Record an entity's dynamic configs as read from (or written to) ZooKeeper."""
        if configs:
            self._broker_configs[entity] = dict(configs)
        else:
            self._broker_configs.pop(entity, None)

    def allocate_producer_ids(self, count: int) -> int:
        raise RuntimeError(
            "cluster mode claims producer ids in /latest_producer_id_block "
            "(franz.broker.producer_ids.ZkProducerIdManager)"
        )

    def _require(self, name: str) -> TopicRecord:
        record = self._topics.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return record


if TYPE_CHECKING:
    _conforms: type[MetadataStore] = TopicMirrorStore
