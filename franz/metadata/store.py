"""The MetadataStore protocol and its records."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["MetadataStore", "TopicRecord"]


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

    def allocate_producer_ids(self, count: int) -> int:
        """Reserve ``count`` producer ids; return the first (Kafka's producer id blocks)."""
        ...
