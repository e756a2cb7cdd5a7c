"""Fixtures for broker unit tests: a ``TopicManager`` over real log dirs, no network."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from franz.broker.topic_manager import TopicManager
from franz.clock import ManualClock
from franz.cluster.replica_manager import ReplicaManager
from franz.config.broker import BrokerConfig
from franz.metadata.local import LocalMetadataStore
from franz.storage.files import TopicPartition
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import make_batch


@dataclass
class Node:
    topics: TopicManager
    log_manager: LogManager
    clock: ManualClock


class Cluster:
    """One broker's TopicManager over real log dirs; ``stop`` then ``start`` restarts it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = ManualClock()
        self.node: Node | None = None
        #: ``server.properties`` keys of the next ``start``.
        self.overrides: dict[str, str] = {}

    def start(self) -> Node:
        config = BrokerConfig({"log.dirs": str(self.root), **self.overrides})
        store = LocalMetadataStore(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        store.load()
        holder: list[TopicManager] = []
        log_manager = LogManager(
            config.log_dirs,
            default_config=config.log_config(),
            clock=self.clock,
            cluster_id="test-cluster",
            topic_config=lambda topic: holder[0].log_config(topic),
        )
        topics = TopicManager(config, store, ReplicaManager(log_manager, 0), broker_id=0)
        holder.append(topics)
        log_manager.startup()
        topics.start_replicas()
        self.node = Node(topics, log_manager, self.clock)
        return self.node

    def stop(self) -> None:
        if self.node is not None:
            self.node.log_manager.shutdown()
            self.node = None


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path / "logs")
    yield c
    c.stop()


@pytest.fixture
def node(cluster: Cluster) -> Node:
    return cluster.start()


def produce(node: Node, tp: TopicPartition, batches: int) -> None:
    """Append ``batches`` client-style batches of ``RECORDS_PER_BATCH`` records to ``tp``."""
    for _ in range(batches):
        start = node.topics.replica_manager.partitions[tp].log_end_offset
        node.topics.replica_manager.append(tp, bytes(make_batch(start, node.clock.wall_ms())))
