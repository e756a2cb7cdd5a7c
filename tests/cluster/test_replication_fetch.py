"""Replication's follower side: replica fetchers copy their leaders' logs byte for byte.

Its own cluster (three ``franz broker`` processes, ids 1-3, on a chroot of their own) with a
short high-watermark checkpoint interval, so the followers' high watermarks (taken from the
leader's fetch responses) can be read from their ``replication-offset-checkpoint`` files.
Until the leader side lands (i-leader), a leader's HW is its LEO, so acks=all does not wait
for the followers: the tests poll (bounded) until the followers have caught up.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster  # noqa: E402
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

PARTITIONS = 3


@pytest.fixture(scope="module")
def rcluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-fetch"))
    props = {"replica.high.watermark.checkpoint.interval.ms": "200"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def create_topic(cluster: Cluster, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(topic, partitions, 3)], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: all(
            cluster.kazoo.exists(f"/brokers/topics/{topic}/partitions/{p}/state") is not None
            for p in range(partitions)
        ),
        30,
        f"{topic}: every partition has a state",
    )


def leader_of(cluster: Cluster, topic: str, partition: int) -> int:
    return int(cluster.json(f"/brokers/topics/{topic}/partitions/{partition}/state")["leader"])


def partition_dir(broker: BrokerProcess, topic: str, partition: int) -> Path:
    return broker.data_dir / "logs" / f"{topic}-{partition}"


def log_bytes(broker: BrokerProcess, topic: str, partition: int) -> bytes:
    """The replica's segments' bytes, in offset order."""
    directory = partition_dir(broker, topic, partition)
    if not directory.exists():
        return b""
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def checkpointed_hw(broker: BrokerProcess, topic: str, partition: int) -> int | None:
    path = broker.data_dir / "logs" / "replication-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[0] == topic and int(fields[1]) == partition:
            return int(fields[2])
    return None


def produce(bootstrap: str, topic: str, count: int, *, idempotent: bool) -> None:
    errors: list[str] = []

    def delivered(err: object, message: object) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
        }
    )
    for i in range(count):
        value = f"record-{i:06d}".encode() * 4
        producer.produce(topic, value, key=str(i % 17).encode(), on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []


def _log_is(broker: BrokerProcess, topic: str, partition: int, expected: bytes) -> bool:
    return log_bytes(broker, topic, partition) == expected


def assert_replicas_identical(cluster: Cluster, topic: str, partitions: int) -> None:
    """Every replica's ``.log`` bytes equal its leader's (bounded poll), and the followers'
    leader-epoch checkpoints match the leader's."""
    for p in range(partitions):
        leader = cluster.brokers[leader_of(cluster, topic, p)]
        expected = log_bytes(leader, topic, p)
        assert expected, f"{topic}-{p}: the leader {leader_of(cluster, topic, p)} holds no data"
        for broker_id, broker in cluster.brokers.items():
            eventually(
                functools.partial(_log_is, broker, topic, p, expected),
                30,
                f"{topic}-{p}: broker {broker_id}'s log equals the leader's",
            )
    for p in range(partitions):
        leader = cluster.brokers[leader_of(cluster, topic, p)]
        epochs = (partition_dir(leader, topic, p) / "leader-epoch-checkpoint").read_text()
        for broker_id, broker in cluster.brokers.items():
            path = partition_dir(broker, topic, p) / "leader-epoch-checkpoint"
            assert path.read_text() == epochs, f"{topic}-{p} broker {broker_id}"


def assert_high_watermarks(cluster: Cluster, topic: str, partitions: int, total: int) -> None:
    """Every replica checkpoints the same HW per partition, and they add up to ``total``
    (the followers' come from the leader's fetch responses)."""

    def same() -> bool:
        hws = [
            {checkpointed_hw(b, topic, p) for b in cluster.brokers.values()}
            for p in range(partitions)
        ]
        return all(len(h) == 1 and None not in h for h in hws) and (
            sum(next(iter(h)) or 0 for h in hws) == total
        )

    eventually(same, 30, f"{topic}: every replica's high watermarks add up to {total}")


def test_followers_copy_the_leaders_log_byte_for_byte(rcluster: Cluster) -> None:
    topic = f"copied-{uuid.uuid4().hex[:6]}"
    create_topic(rcluster, topic)
    produce(rcluster.bootstrap(), topic, 3000, idempotent=False)
    produce(rcluster.bootstrap(), topic, 2000, idempotent=True)
    assert_replicas_identical(rcluster, topic, PARTITIONS)
    assert_high_watermarks(rcluster, topic, PARTITIONS, 5000)
