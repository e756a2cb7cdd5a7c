"""Issue 17, i-epoch: ``__consumer_offsets``' replication factor as Kafka 3.9 applies it in
ZooKeeper mode, and a consumer validating its position with OffsetsForLeaderEpoch after a
leader-epoch change, with ZooKeeper and ``franz broker`` processes.

* ``offsets.topic.replication.factor`` (default 3): while fewer brokers are alive, the first
  FindCoordinator creates nothing and every lookup answers COORDINATOR_NOT_AVAILABLE (Kafka
  3.9's ``AutoTopicCreationManager.createTopicsInZk``: the assignment refuses a factor above
  the live brokers); once the third broker is up the topic is created with every partition
  on all three (``/brokers/topics/__consumer_offsets``).
* A follower dies: the controller takes it out of the ISR and bumps the leader epoch; a
  librdkafka consumer reading from the leader sees the new epoch, validates its position with
  OffsetsForLeaderEpoch (KIP-320) and goes on reading where it was, without a reset.

Each test runs a cluster of its own (``start_cluster``): one starts brokers late, the other
kills one.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from franz.protocol.api_keys import ApiKey
from tests.support.broker import BrokerProcess
from tests.support.cluster import (
    Cluster,
    broker_props,
    eventually,
    new_chroot,
    produce_all,
    start_cluster,
)
from tests.support.wire import WireClient, request_at
from tests.support.zookeeper import ZooKeeperServer

OFFSETS_TOPIC = "__consumer_offsets"
NONE = 0
COORDINATOR_NOT_AVAILABLE = 15


def find_coordinator(bootstrap: str, group: str) -> tuple[int, int]:
    """FindCoordinator v3 for ``group``: (error code, node id)."""
    with WireClient.connect(bootstrap, timeout=15) as wire:
        response = request_at(wire, ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    return int(response.error_code), int(response.node_id)


def test_offsets_topic_waits_for_enough_live_brokers_then_gets_replication_factor_3(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    zk_connect = new_chroot(zookeeper_server.connect_string)
    with start_cluster(zk_connect, tmp_path, ids=[1, 2]) as cluster:
        first = cluster.brokers[1].bootstrap
        # Every lookup while two brokers are alive: no topic, COORDINATOR_NOT_AVAILABLE.
        for attempt in range(5):
            for broker in cluster.live():
                assert find_coordinator(broker.bootstrap, f"g-{attempt}") == (
                    COORDINATOR_NOT_AVAILABLE,
                    -1,
                )
            time.sleep(0.2)
        assert cluster.kazoo.exists(f"/brokers/topics/{OFFSETS_TOPIC}") is None

        third = BrokerProcess(tmp_path / "broker-3", broker_props(3, zk_connect)).start()
        cluster.brokers[3] = third
        eventually(
            lambda: len(cluster.kcat_metadata(cluster.brokers[1])["brokers"]) == 3,
            30,
            "broker 1 sees 3 brokers",
        )
        eventually(
            lambda: find_coordinator(first, "g-late")[0] == NONE,
            30,
            "FindCoordinator answers once 3 brokers are alive",
        )
        topic = cluster.json(f"/brokers/topics/{OFFSETS_TOPIC}")
        partitions = int(broker_props(1, "")["offsets.topic.num.partitions"])
        assert sorted(topic["partitions"]) == [str(p) for p in range(partitions)]
        for p, replicas in topic["partitions"].items():
            assert sorted(replicas) == [1, 2, 3], (p, replicas)
        # The preferred replicas (first of each list) are spread over the brokers.
        assert len({replicas[0] for replicas in topic["partitions"].values()}) == partitions
        for p in range(partitions):
            path = f"/brokers/topics/{OFFSETS_TOPIC}/partitions/{p}/state"
            eventually(lambda path=path: cluster.kazoo.exists(path) is not None, 30, path)
            state = cluster.json(path)
            assert state["leader"] in (1, 2, 3) and sorted(state["isr"]) == [1, 2, 3], state


# -- a consumer across a leader-epoch change ---------------------------------------------------

TOPIC = "epoch-validated"


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    with start_cluster(new_chroot(zookeeper_server.connect_string), tmp_path) as c:
        yield c


def test_librdkafka_keeps_its_position_when_a_follower_dies(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=30)[TOPIC].result(60)
    state_path = f"/brokers/topics/{TOPIC}/partitions/0/state"
    eventually(lambda: cluster.kazoo.exists(state_path) is not None, 30, state_path)
    before = cluster.json(state_path)
    leader = before["leader"]
    follower = next(b for b in before["isr"] if b != leader)
    first = [f"a{i}".encode() for i in range(20)]
    produce_all(cluster.brokers[leader].bootstrap, [(TOPIC, 0, v) for v in first])

    lines: list[str] = []

    class Captured(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
    logger.addHandler(Captured())
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.brokers[leader].bootstrap,
            "group.id": f"epoch-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
            "debug": "protocol",
        },
        logger=logger,
    )
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        got += _poll_values(consumer, len(first))
        cluster.brokers[follower].kill()
        # The controller (on a live broker) takes the dead follower out of the ISR and
        # bumps the leader epoch once the follower's ZooKeeper session expires.
        eventually(
            lambda: cluster.json(state_path)["leader_epoch"] > before["leader_epoch"],
            30,
            "the leader epoch is bumped",
        )
        after = cluster.json(state_path)
        assert after["leader"] == leader and follower not in after["isr"], after
        deadline = time.monotonic() + 30
        while not any("Received OffsetForLeaderEpochResponse" in line for line in lines):
            assert time.monotonic() < deadline, "librdkafka never sent OffsetsForLeaderEpoch"
            message = consumer.poll(0.2)
            assert message is None, (message.error(), message.value())  # nothing new yet
        second = [f"b{i}".encode() for i in range(10)]
        produce_all(cluster.brokers[leader].bootstrap, [(TOPIC, 0, v) for v in second])
        got += _poll_values(consumer, len(second))
        position = consumer.position([TopicPartition(TOPIC, 0)])[0].offset
    finally:
        consumer.close()
    assert got == first + second  # once each, in order: no reset, no truncation reported
    assert position == len(first) + len(second)


def _poll_values(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        values.append(message.value())
    assert len(values) == count, values
    return values
