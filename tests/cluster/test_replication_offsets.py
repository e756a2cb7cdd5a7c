"""``__consumer_offsets`` is replicated (issue 17, item 6): offsets a group committed survive
the SIGKILL of its coordinator's broker, and the partition's new leader coordinates the group.

Its own cluster of three ``franz broker`` processes (the test kills one), with
``offsets.topic.replication.factor`` 3 (Kafka's default).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from franz.coordinator.group.offsets_schema import partition_for
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "committed"
PARTITIONS = 3


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-offsets"))
    props = {"replica.lag.time.max.ms": "3000", "offsets.topic.replication.factor": "3"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap()})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(
            60
        )
        yield c


def offsets_leader(cluster: Cluster, partition: int) -> int:
    return int(
        cluster.json(f"/brokers/topics/{OFFSETS_TOPIC}/partitions/{partition}/state")["leader"]
    )


def offsets_isr(cluster: Cluster, partition: int) -> list[int]:
    state = cluster.json(f"/brokers/topics/{OFFSETS_TOPIC}/partitions/{partition}/state")
    return [int(b) for b in state["isr"]]


def committed(bootstrap: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed(
            [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30
        )
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def commit(bootstrap: str, group: str, base: int) -> None:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        offsets = [TopicPartition(TOPIC, p, base + p) for p in range(PARTITIONS)]
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def test_committed_offsets_survive_the_coordinators_broker(cluster: Cluster) -> None:
    group = f"survivor-{uuid.uuid4().hex[:8]}"
    commit(cluster.bootstrap(), group, 100)  # creates __consumer_offsets
    assert committed(cluster.bootstrap(), group) == {p: 100 + p for p in range(PARTITIONS)}
    count = len(cluster.kazoo.get_children(f"/brokers/topics/{OFFSETS_TOPIC}/partitions"))
    for p in range(count):
        eventually(
            lambda p=p: sorted(offsets_isr(cluster, p)) == [1, 2, 3],
            60,
            f"{OFFSETS_TOPIC}-{p} has every replica in its ISR",
        )

    # A commit is answered once every ISR member has it (offsets.commit.required.acks=-1):
    # the coordinator may die right after answering.
    commit(cluster.bootstrap(), group, 200)
    partition = partition_for(group, count)
    victim = offsets_leader(cluster, partition)
    cluster.brokers[victim].kill()
    survivors = [b for b in (1, 2, 3) if b != victim]
    live = ",".join(cluster.brokers[b].bootstrap for b in survivors)
    eventually(
        lambda: offsets_leader(cluster, partition) in survivors,
        60,
        "another broker leads the group's offsets partition",
    )
    assert committed(live, group) == {p: 200 + p for p in range(PARTITIONS)}
