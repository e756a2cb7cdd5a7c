"""The MetadataStore protocol and its records."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final, Protocol

__all__ = ["DEFAULT_BROKER_ENTITY", "AsyncMetadataStore", "MetadataStore", "TopicRecord"]

#: The entity name of the cluster-wide dynamic broker defaults (Kafka's
#: ``ZooKeeperInternals.DEFAULT_STRING``: the znode ``/config/brokers/<default>``); one
#: broker's dynamic configs are under its id (``/config/brokers/0``).
DEFAULT_BROKER_ENTITY: Final = "<default>"


@dataclass(slots=True)
class TopicRecord:
    """One topic as the controller knows it (Kafka's ``/brokers/topics/<t>`` znode plus
    ``/config/topics/<t>``): its id, replica assignment per partition, config overrides."""

    name: str
    topic_id: uuid.UUID
    #: partition -> replica broker ids (the first is the preferred leader).
    assignment: dict[int, list[int]]
    #: Topic-level config overrides, Kafka names and string values.
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def partition_count(self) -> int:
        return len(self.assignment)


class MetadataStore(Protocol):
    """Durable cluster metadata. Every mutation is durable when the call returns."""

    def load(self) -> None: ...

    def topics(self) -> dict[str, TopicRecord]: ...

    def create_topic(self, record: TopicRecord) -> None: ...

    def delete_topic(self, name: str) -> None: ...

    def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None: ...

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    def broker_configs(self, entity: str) -> dict[str, str]:
        """The dynamic configs of a broker (``entity`` its id) or of the cluster-wide default
        (``DEFAULT_BROKER_ENTITY``), Kafka names and string values; empty when none."""
        ...

    def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        """Replace the dynamic configs of ``entity`` (empty: remove them)."""
        ...

    def allocate_producer_ids(self, count: int) -> int:
        """Reserve ``count`` producer ids; return the first (Kafka's producer id blocks)."""
        ...


class AsyncMetadataStore(Protocol):
    """``MetadataStore``'s asynchronous flavour, for stores whose writes are network round
    trips (ZooKeeper): the same operations and meanings, each a coroutine, so nothing blocks
    the broker's event loop. Every mutation is durable when the awaited call returns."""

    async def load(self) -> None: ...

    async def topics(self) -> dict[str, TopicRecord]: ...

    async def create_topic(self, record: TopicRecord) -> None: ...

    async def delete_topic(self, name: str) -> None: ...

    async def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None: ...

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None: ...

    async def broker_configs(self, entity: str) -> dict[str, str]: ...

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None: ...

    async def allocate_producer_ids(self, count: int) -> int: ...
