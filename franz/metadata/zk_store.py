"""``ZooKeeperMetadataStore``: ``AsyncMetadataStore`` in Kafka's ZooKeeper layout.

Where each record lives (the JSON is in ``znodes``):

* a topic: ``/brokers/topics/<t>`` (id + assignment) and ``/config/topics/<t>`` (overrides);
  a config change also writes ``/config/changes/config_change_<seq>`` with
  ``{"version":2,"entity_path":"topics/<t>"}`` so every broker re-reads it;
* dynamic broker configs: ``/config/brokers/<id>`` or ``/config/brokers/<default>``, with
  the same notification (``brokers/<entity>``); Kafka writes ``{"version":1,"config":{}}``
  rather than deleting the znode when the configs become empty;
* producer ids: ``/latest_producer_id_block`` holds the last block handed out; a new block
  starts after it and is claimed with a set conditional on the znode's version, retried on
  a lost race (Kafka's ``ZkProducerIdManager.getNewProducerIdBlock``).

``delete_topic`` is the controller's final step (the topic's znodes go); an admin request to
delete only marks the topic (``KafkaZkClient.mark_topic_for_deletion``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from typing import TYPE_CHECKING, Final

from franz.errors import UnknownTopicOrPartitionError
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.store import AsyncMetadataStore, TopicRecord
from franz.metadata.znodes import (
    ProducerIdBlock,
    ProducerIdBlockZNode,
    TopicAssignment,
    TopicZNode,
    ZNodeDecodeError,
)
from franz.metadata.zookeeper import BadVersionError, NodeExistsZkError
from franz.protocol.kafka_uuid import random_uuid

__all__ = ["ZooKeeperMetadataStore"]

log = logging.getLogger(__name__)

#: Bound on read-modify-write retries lost to other brokers' conditional writes.
_MAX_PRODUCER_ID_ATTEMPTS: Final = 100

#: Producer ids are int64 on the wire.
_MAX_PRODUCER_ID: Final = 2**63 - 1


class ZooKeeperMetadataStore:
    def __init__(self, client: KafkaZkClient, broker_id: int) -> None:
        self.client = client
        self.broker_id = broker_id

    async def load(self) -> None:
        await self.client.ensure_persistent_paths()

    async def topics(self) -> dict[str, TopicRecord]:
        """Every topic that decodes (a malformed one is skipped and logged by the client)."""
        assignments = await self.client.get_topic_assignments()
        out: dict[str, TopicRecord] = {}
        for name, assignment in sorted(assignments.items()):
            try:
                configs = await self.client.get_entity_configs("topics", name)
            except ZNodeDecodeError as exc:
                log.error("topic %s: ignoring its configs: %s", name, exc)
                configs = {}
            topic_id = assignment.topic_id or await self._assign_topic_id(name)
            out[name] = TopicRecord(
                name=name,
                topic_id=topic_id,
                assignment={p: list(r) for p, r in sorted(assignment.partitions.items())},
                configs=configs,
            )
        return out

    async def create_topic(self, record: TopicRecord) -> None:
        await self.client.create_topic_znode(
            record.name,
            TopicAssignment(record.topic_id, record.assignment),
            record.configs,
        )

    async def delete_topic(self, name: str) -> None:
        await self._require(name)
        await self.client.delete_topic_znodes(name)

    async def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None:
        """Kafka's ``AdminZkClient.addPartitions``: rewrite the topic znode with the new
        partitions added, conditional on the version read."""
        found = await self.client.zk.get_or_none(TopicZNode.path(name))
        if found is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        current = TopicZNode.decode(name, found[0])
        changed = dataclasses.replace(current, partitions={**current.partitions, **assignment})
        await self.client.set_topic_assignment(name, changed, found[1].version)

    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        await self._require(name)
        await self.client.set_entity_configs("topics", name, configs)

    async def broker_configs(self, entity: str) -> dict[str, str]:
        return await self.client.get_entity_configs("brokers", entity)

    async def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        await self.client.set_entity_configs("brokers", entity, configs)

    async def allocate_producer_ids(self, count: int) -> int:
        zk = self.client.zk
        path = ProducerIdBlockZNode.path
        for _ in range(_MAX_PRODUCER_ID_ATTEMPTS):
            found = await zk.get_or_none(path)
            if found is None:
                with contextlib.suppress(NodeExistsZkError):
                    await zk.create(path, makepath=True)
                continue
            data, stat = found
            first = ProducerIdBlockZNode.decode(data).last + 1 if data else 0
            if first > _MAX_PRODUCER_ID - count + 1:
                raise RuntimeError("Have exhausted all producerIds.")  # Kafka's message
            block = ProducerIdBlock(self.broker_id, first, count)
            try:
                await zk.set(path, ProducerIdBlockZNode.encode(block), stat.version)
            except BadVersionError:
                continue  # another broker claimed a block: read again
            return first
        raise RuntimeError(f"could not claim a producer id block at {path}")

    async def _assign_topic_id(self, name: str) -> uuid.UUID:
        """A topic created before Kafka 2.8 has no id: write one (conditionally, so all
        brokers agree on whichever write landed first), as Kafka's controller does."""
        for _ in range(_MAX_PRODUCER_ID_ATTEMPTS):
            data, stat = await self.client.zk.get(TopicZNode.path(name))
            current = TopicZNode.decode(name, data)
            if current.topic_id is not None:
                return current.topic_id
            with_id = dataclasses.replace(current, topic_id=random_uuid())
            try:
                await self.client.set_topic_assignment(name, with_id, stat.version)
            except BadVersionError:
                continue
            assert with_id.topic_id is not None
            return with_id.topic_id
        raise RuntimeError(f"could not assign a topic id to {name}")

    async def _require(self, name: str) -> None:
        if await self.client.zk.exists(TopicZNode.path(name)) is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")


if TYPE_CHECKING:
    _conforms: type[AsyncMetadataStore] = ZooKeeperMetadataStore
