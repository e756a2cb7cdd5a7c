"""``TopicMirrorStore``: the synchronous ``MetadataStore`` a cluster-mode broker reads topics
from, a copy of ZooKeeper's topics kept in memory.

In cluster mode the topics live in ZooKeeper (``franz.metadata.zk_store``), whose calls are
network round trips and so coroutines; the broker's synchronous readers (log configs when a
log opens, the group coordinator's "does this partition exist", AlterConfigs' existence
check) read this mirror instead. It is refreshed from ZooKeeper when the controller tells
the broker about topics it does not know yet (LeaderAndIsr), at startup, and when this broker
creates or changes a topic itself; a topic the controller deleted (UpdateMetadata) is dropped.

Dynamic broker configs and producer id blocks are delegated to the embedded store under the
first log dir (``LocalMetadataStore``): they are per broker there, not shared through
``/config/brokers`` and ``/latest_producer_id_block`` yet (producer ids are made unique per
broker by a per-broker base: ``broker.id << 40``, so blocks of different brokers never
overlap; a known gap until ``/latest_producer_id_block`` is used).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Final

from franz.errors import UnknownTopicOrPartitionError
from franz.metadata.local import LocalMetadataStore
from franz.metadata.store import MetadataStore, TopicRecord

__all__ = ["PRODUCER_ID_BROKER_SHIFT", "TopicMirrorStore"]

#: Producer ids of broker ``b`` start at ``b << 40`` (module docstring).
PRODUCER_ID_BROKER_SHIFT: Final = 40


class TopicMirrorStore:
    def __init__(self, local: LocalMetadataStore, broker_id: int) -> None:
        self.local = local
        self.broker_id = broker_id
        self.path = local.path
        self._topics: dict[str, TopicRecord] = {}

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
        return self.local.broker_configs(entity)

    def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        self.local.set_broker_configs(entity, configs)

    def allocate_producer_ids(self, count: int) -> int:
        return (self.broker_id << PRODUCER_ID_BROKER_SHIFT) + self.local.allocate_producer_ids(
            count
        )

    def _require(self, name: str) -> TopicRecord:
        record = self._topics.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return record


if TYPE_CHECKING:
    _conforms: type[MetadataStore] = TopicMirrorStore
